package audit

import (
	"encoding/json"
	"time"
)

// MarshalReflect is the events' former encoding, json.Marshal of eventJSON values: the
// reference AppendJSON is checked against byte for byte.
func MarshalReflect(es AdmissionEvents) ([]byte, error) {
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
