package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/switchyard-gw/switchyard/internal/dialect"
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

// MarshalJSON encodes the events as AppendJSON does.
func (es AdmissionEvents) MarshalJSON() ([]byte, error) {
	return es.AppendJSON(make([]byte, 0, 64*(int(es.n)+1))), nil
}

// AppendJSON appends the events' JSON to dst and returns it: an array of objects, each with
// "kind" and the members of its kind (docs/md "Admission events"), a final
// {"kind":"omitted","count":N} when events were omitted, "[]" when there are none. It is the
// one encoder of the events: a store's column (requests.admission_events) and MarshalJSON use
// it. No reflection and no allocation beyond dst's growth (json.Marshal of the events was a
// quarter to a third of the SQLite audit writer's CPU per record). Strings are not
// HTML-escaped (json.Marshal of a record escapes them on top); a non-finite reserve_usd (never
// produced by the gateway) is written as null, which reads back as 0.
func (es *AdmissionEvents) AppendJSON(dst []byte) []byte {
	dst = append(dst, '[')
	for i := range es.Len() {
		if i > 0 {
			dst = append(dst, ',')
		}
		e := es.At(i)
		dst = appendEvent(dst, &e)
	}
	if n := es.Omitted(); n > 0 {
		if es.Len() > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"kind":"`+EventOmitted+`","count":`...)
		dst = strconv.AppendInt(dst, int64(n), 10)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendEvent appends e as one object of MarshalJSON: "kind", then each member that
// MarshalJSON writes for e, in its order.
func appendEvent(dst []byte, e *AdmissionEvent) []byte {
	dst = append(dst, `{"kind":`...)
	dst = dialect.AppendJSONString(dst, e.Kind)
	member := func(name, v string) {
		if v != "" {
			dst = append(dst, `,"`...)
			dst = append(dst, name...)
			dst = append(dst, `":`...)
			dst = dialect.AppendJSONString(dst, v)
		}
	}
	member("stage", e.Stage)
	member("deployment", e.Deployment)
	member("model", e.Model)
	member("circuit", e.Circuit)
	member("provider", e.Provider)
	if !e.Until.IsZero() {
		dst = append(dst, `,"until":"`...)
		dst = e.Until.UTC().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, '"')
	}
	limits := e.Kind == EventLimitsChecked
	if limits || e.Kind == EventReserveTaken {
		// No scope bit: no member (MarshalJSON's empty scopes are omitted as empty).
		if e.Scopes&(ScopeKey|ScopeWorkspace|ScopeAccount) != 0 {
			dst = append(dst, `,"scopes":[`...)
			first := true
			for _, s := range scopeNames {
				if e.Scopes&s.bit != 0 {
					if !first {
						dst = append(dst, ',')
					}
					first = false
					dst = append(dst, '"')
					dst = append(dst, s.name...)
					dst = append(dst, '"')
				}
			}
			dst = append(dst, ']')
		}
		dst = append(dst, `,"credit":`...)
		dst = strconv.AppendBool(dst, e.Credit)
		if limits {
			dst = append(dst, `,"tokens":`...)
			dst = strconv.AppendInt(dst, e.Tokens, 10)
		}
		dst = append(dst, `,"reserve_usd":`...)
		dst = appendJSONFloat(dst, e.ReserveUSD)
	}
	member("error_code", e.ErrorCode)
	member("limit_kind", e.LimitKind)
	if e.Kind == EventHouseRoutesDropped || e.Kind == EventOmitted {
		dst = append(dst, `,"count":`...)
		dst = strconv.AppendInt(dst, int64(e.Count), 10)
	}
	return append(dst, '}')
}

// appendJSONFloat appends f as encoding/json writes a float64 (plain digits between 1e-6 and
// 1e21, else an exponent without a leading zero), or null when f is not finite.
func appendJSONFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
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
