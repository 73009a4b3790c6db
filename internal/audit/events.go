package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// The kinds of an admission event (AdmissionEvent.Kind; R-AUDIT-2, seed 000's
// admission_events, issue 11 item 5; docs/audit.md "Admission events").
const (
	// EventLimitsChecked: the caller's limits were checked in the admission store: Scopes names
	// the layers (key, workspace, account), Tokens the tpm charge, ReserveUSD the reserve asked,
	// Credit whether the prepaid balance was part of the check. A refusal follows when they did
	// not fit.
	EventLimitsChecked = "limits_checked"
	// EventReserveTaken: money is held for the request until it ends: ReserveUSD against the
	// layers' budgets and, when Credit, the prepaid balance.
	EventReserveTaken = "reserve_taken"
	// EventRefused: the request was refused before any attempt: ErrorCode is the canonical class,
	// LimitKind the limit kind of a limit refusal (rpm, tpm, concurrency, budget, credit, health).
	EventRefused = "refused"
	// EventCircuitOpen: a route was dropped (Stage plan) or skipped at dispatch (Stage
	// dispatch) because a circuit was open: Circuit is "deployment" or "model" (the (deployment,
	// model) circuit of hangs), Until when its cooldown ends (zero: unknown, e.g. a half-open
	// circuit whose probe is in flight).
	EventCircuitOpen = "circuit_open"
	// EventProviderPaused: a route was dropped or skipped because its provider is paused after
	// an upstream 429 (R-CIRCUIT-4): Provider is the pause scope, Until its end.
	EventProviderPaused = "provider_paused"
	// EventHouseRoutesDropped: a prepaid balance could not cover the reserve, so the house
	// routes left the plan (Count of them) and the caller's own connections serve
	// (docs/routing.md "Routing policies and BYOK").
	EventHouseRoutesDropped = "house_routes_dropped"
	// EventOmitted is never stored: the JSON form ends with {"kind":"omitted","count":N} when N
	// events did not fit in MaxAdmissionEvents.
	EventOmitted = "omitted"
)

// Stages of a route event (AdmissionEvent.Stage).
const (
	StagePlan     = "plan"     // while the plan was built: the route is in the plan's dropped list
	StageDispatch = "dispatch" // when its turn came in the attempt loop: not an attempt (R-AUDIT-3)
)

// Circuits of an EventCircuitOpen (AdmissionEvent.Circuit).
const (
	CircuitDeployment = "deployment"
	CircuitModel      = "model"
)

// Layer scopes of an EventLimitsChecked (AdmissionEvent.Scopes, a bit set).
const (
	ScopeKey uint8 = 1 << iota
	ScopeWorkspace
	ScopeAccount
)

var scopeNames = [...]struct {
	bit  uint8
	name string
}{{ScopeKey, "key"}, {ScopeWorkspace, "workspace"}, {ScopeAccount, "account"}}

// AdmissionEvent is one admission step of a request: limits checked, a reserve taken, a
// refusal, a route dropped for an open circuit or a paused provider. It holds no pointer of its
// own (its strings are the gateway's names: deployments, models, constants), so adding one to
// a record copies a value and allocates nothing. Which fields are set depends on Kind (see the
// Event* constants); JSON omits the others.
type AdmissionEvent struct {
	Kind string
	// Route events (circuit_open, provider_paused).
	Stage      string
	Deployment string
	Model      string
	Circuit    string
	Provider   string
	Until      time.Time
	// limits_checked, reserve_taken.
	Scopes     uint8 // ScopeKey | ScopeWorkspace | ScopeAccount
	Credit     bool
	Tokens     int64
	ReserveUSD float64
	// refused.
	ErrorCode string
	LimitKind string
	// house_routes_dropped; omitted.
	Count int
}

// MaxAdmissionEvents is how many events a record keeps; later ones are counted (JSON: a final
// {"kind":"omitted","count":N}).
const MaxAdmissionEvents = 8

// AdmissionEvents are a request's admission events in order: a fixed-size value, so a record
// carries them without an allocation (the zero value is empty, ready to use). JSON is an array
// ([] when empty).
type AdmissionEvents struct {
	n       uint8
	omitted uint16
	ev      [MaxAdmissionEvents]AdmissionEvent
}

// Add appends e, or counts it as omitted when MaxAdmissionEvents are kept already.
func (es *AdmissionEvents) Add(e AdmissionEvent) {
	if int(es.n) < len(es.ev) {
		es.ev[es.n] = e
		es.n++
		return
	}
	if es.omitted < math.MaxUint16 {
		es.omitted++
	}
}

// Len is the number of events kept.
func (es *AdmissionEvents) Len() int { return int(es.n) }

// Omitted is the number of events that did not fit.
func (es *AdmissionEvents) Omitted() int { return int(es.omitted) }

// At returns the i-th event kept, 0 <= i < Len.
func (es *AdmissionEvents) At(i int) AdmissionEvent { return es.ev[:es.n][i] }

// Reset empties es.
func (es *AdmissionEvents) Reset() { *es = AdmissionEvents{} }

// eventJSON is an event's JSON form.
type eventJSON struct {
	Kind       string   `json:"kind"`
	Stage      string   `json:"stage,omitempty"`
	Deployment string   `json:"deployment,omitempty"`
	Model      string   `json:"model,omitempty"`
	Circuit    string   `json:"circuit,omitempty"`
	Provider   string   `json:"provider,omitempty"`
	Until      string   `json:"until,omitempty"`
	Scopes     []string `json:"scopes,omitempty"`
	Credit     *bool    `json:"credit,omitempty"`
	Tokens     *int64   `json:"tokens,omitempty"`
	ReserveUSD *float64 `json:"reserve_usd,omitempty"`
	ErrorCode  string   `json:"error_code,omitempty"`
	LimitKind  string   `json:"limit_kind,omitempty"`
	Count      *int     `json:"count,omitempty"`
}

func (e *AdmissionEvent) toJSON() eventJSON {
	v := eventJSON{Kind: e.Kind, Stage: e.Stage, Deployment: e.Deployment, Model: e.Model, Circuit: e.Circuit,
		Provider: e.Provider, ErrorCode: e.ErrorCode, LimitKind: e.LimitKind}
	if !e.Until.IsZero() {
		v.Until = e.Until.UTC().Format(time.RFC3339Nano)
	}
	switch e.Kind {
	case EventLimitsChecked, EventReserveTaken:
		for _, s := range scopeNames {
			if e.Scopes&s.bit != 0 {
				v.Scopes = append(v.Scopes, s.name)
			}
		}
		if e.Kind == EventLimitsChecked && v.Scopes == nil {
			v.Scopes = []string{}
		}
		credit, reserve := e.Credit, e.ReserveUSD
		v.Credit, v.ReserveUSD = &credit, &reserve
		if e.Kind == EventLimitsChecked {
			tokens := e.Tokens
			v.Tokens = &tokens
		}
	case EventHouseRoutesDropped, EventOmitted:
		n := e.Count
		v.Count = &n
	}
	return v
}

// MarshalJSON encodes the events as an array of objects, each with "kind" and the members of
// its kind (docs/audit.md "Admission events"), and a final {"kind":"omitted","count":N} when
// events were omitted.
func (es AdmissionEvents) MarshalJSON() ([]byte, error) {
	out := make([]eventJSON, 0, int(es.n)+1)
	for i := range es.ev[:es.n] {
		out = append(out, es.ev[i].toJSON())
	}
	if es.omitted > 0 {
		e := AdmissionEvent{Kind: EventOmitted, Count: int(es.omitted)}
		out = append(out, e.toJSON())
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the form MarshalJSON writes (a store's column); null is empty. Unknown
// kinds and members are kept as far as the fields allow.
func (es *AdmissionEvents) UnmarshalJSON(b []byte) error {
	var in []eventJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*es = AdmissionEvents{}
	for _, v := range in {
		if v.Kind == EventOmitted {
			if v.Count != nil {
				es.omitted = uint16(min(max(*v.Count, 0), math.MaxUint16))
			}
			continue
		}
		e := AdmissionEvent{Kind: v.Kind, Stage: v.Stage, Deployment: v.Deployment, Model: v.Model, Circuit: v.Circuit,
			Provider: v.Provider, ErrorCode: v.ErrorCode, LimitKind: v.LimitKind}
		if v.Until != "" {
			t, err := time.Parse(time.RFC3339Nano, v.Until)
			if err != nil {
				return fmt.Errorf("admission event until: %w", err)
			}
			e.Until = t
		}
		for _, s := range v.Scopes {
			for _, sn := range scopeNames {
				if s == sn.name {
					e.Scopes |= sn.bit
				}
			}
		}
		if v.Credit != nil {
			e.Credit = *v.Credit
		}
		if v.Tokens != nil {
			e.Tokens = *v.Tokens
		}
		if v.ReserveUSD != nil {
			e.ReserveUSD = *v.ReserveUSD
		}
		if v.Count != nil {
			e.Count = *v.Count
		}
		es.Add(e)
	}
	return nil
}

// Score is a candidate's strategy metric on an attempt (Attempt.Score). The zero Score is "no
// metric" (the route had none: unpriced, too few samples, or a strategy without a metric; and
// attempts recorded before the field existed), JSON null.
type Score struct {
	Value float64
	Valid bool
}

// ScoreOf is f as a Score: not Valid when f is NaN or infinite (plan.Candidate.Score's "none").
func ScoreOf(f float64) Score {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Score{}
	}
	return Score{Value: f, Valid: true}
}

// MarshalJSON encodes s as a number, or null when it is not Valid.
func (s Score) MarshalJSON() ([]byte, error) {
	if !s.Valid {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, s.Value, 'g', -1, 64), nil
}

// UnmarshalJSON reads a number, or null as the zero Score.
func (s *Score) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = Score{}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*s = ScoreOf(f)
	return nil
}
