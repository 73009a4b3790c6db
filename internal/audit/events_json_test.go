package audit_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// eventCases are event lists covering every kind, every member, the omitted count and floats
// on both sides of encoding/json's exponent thresholds.
func eventCases() map[string]audit.AdmissionEvents {
	at := time.Date(2026, 3, 1, 12, 0, 30, 5, time.FixedZone("x", 3600))
	cases := map[string]audit.AdmissionEvents{"none": {}, "FullRecord": storetest.FullRecord("r").AdmissionEvents}
	add := func(name string, es ...audit.AdmissionEvent) {
		var v audit.AdmissionEvents
		for _, e := range es {
			v.Add(e)
		}
		cases[name] = v
	}
	add("route events",
		audit.AdmissionEvent{Kind: audit.EventCircuitOpen, Stage: audit.StageDispatch, Deployment: "d", Model: "m",
			Circuit: audit.CircuitDeployment, Until: at},
		audit.AdmissionEvent{Kind: audit.EventCircuitOpen, Stage: audit.StagePlan, Deployment: "d", Model: "m",
			Circuit: audit.CircuitModel},
		audit.AdmissionEvent{Kind: audit.EventProviderPaused, Stage: audit.StagePlan, Deployment: "d", Model: "m",
			Provider: "openai", Until: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
	add("limits",
		audit.AdmissionEvent{Kind: audit.EventLimitsChecked, Tokens: 0, ReserveUSD: 0},
		audit.AdmissionEvent{Kind: audit.EventLimitsChecked, Scopes: audit.ScopeKey | audit.ScopeWorkspace | audit.ScopeAccount,
			Credit: true, Tokens: math.MaxInt64, ReserveUSD: 1e21},
		audit.AdmissionEvent{Kind: audit.EventLimitsChecked, Scopes: audit.ScopeWorkspace, Tokens: -1, ReserveUSD: 1e-7},
		audit.AdmissionEvent{Kind: audit.EventReserveTaken, ReserveUSD: 123456789.125},
		audit.AdmissionEvent{Kind: audit.EventReserveTaken, Scopes: audit.ScopeKey, Credit: true, ReserveUSD: 1e-6},
		audit.AdmissionEvent{Kind: audit.EventReserveTaken, Scopes: audit.ScopeAccount, ReserveUSD: 9.999999999999999e20},
		audit.AdmissionEvent{Kind: audit.EventReserveTaken, ReserveUSD: -2.5e-300},
		audit.AdmissionEvent{Kind: audit.EventReserveTaken, ReserveUSD: 1.5e300})
	add("refusals and counts",
		audit.AdmissionEvent{Kind: audit.EventRefused, ErrorCode: "rate_limited", LimitKind: "rpm"},
		audit.AdmissionEvent{Kind: audit.EventRefused, ErrorCode: "gateway_error"},
		audit.AdmissionEvent{Kind: audit.EventHouseRoutesDropped, Count: 3},
		audit.AdmissionEvent{Kind: audit.EventHouseRoutesDropped},
		audit.AdmissionEvent{Kind: "future_kind", Stage: "s", Scopes: audit.ScopeKey, Credit: true, Tokens: 5, Count: 7,
			ErrorCode: "e", Until: at})
	var full []audit.AdmissionEvent
	for i := range audit.MaxAdmissionEvents + 3 {
		full = append(full, audit.AdmissionEvent{Kind: audit.EventHouseRoutesDropped, Count: i})
	}
	add("omitted", full...)
	return cases
}

// TestAppendJSONIsReflectEncoding: AppendJSON writes byte for byte what json.Marshal of the
// events wrote into the column before it (for strings without HTML characters), and reads back
// as the same events.
func TestAppendJSONIsReflectEncoding(t *testing.T) {
	for name, es := range eventCases() {
		want, err := audit.MarshalReflect(es)
		if err != nil {
			t.Fatal(err)
		}
		got := es.AppendJSON(nil)
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		var back audit.AdmissionEvents
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(back, normalized(es)) {
			t.Errorf("%s: read back %+v, want %+v", name, back, es)
		}
	}
}

// normalized is es as it reads back from its JSON: times in UTC, members its kind does not
// write zero.
func normalized(es audit.AdmissionEvents) audit.AdmissionEvents {
	b, err := audit.MarshalReflect(es)
	if err != nil {
		panic(err)
	}
	var out audit.AdmissionEvents
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// TestAppendJSONOddValues: strings that need escaping (quotes, control characters, HTML
// characters, invalid UTF-8) read back as encoding/json would have stored them; a non-finite
// reserve (which json.Marshal refuses, failing the whole batch) is written as null and reads
// back as 0; the rest of the record is kept.
func TestAppendJSONOddValues(t *testing.T) {
	var es audit.AdmissionEvents
	es.Add(audit.AdmissionEvent{Kind: audit.EventCircuitOpen, Stage: audit.StagePlan,
		Deployment: "quote\" back\\ nl\n ctl\x01 <b>&amp; \u2028 ü 模型", Model: "bad \xff end", Circuit: audit.CircuitModel})
	es.Add(audit.AdmissionEvent{Kind: audit.EventReserveTaken, Scopes: audit.ScopeAccount, ReserveUSD: math.NaN()})
	es.Add(audit.AdmissionEvent{Kind: audit.EventLimitsChecked, Tokens: 9, ReserveUSD: math.Inf(1)})
	b := es.AppendJSON(nil)
	if !json.Valid(b) {
		t.Fatalf("not valid JSON: %s", b)
	}
	var got audit.AdmissionEvents
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var want audit.AdmissionEvents
	e0 := es.At(0)
	e0.Model = "bad \ufffd end"
	want.Add(e0)
	e1 := es.At(1)
	e1.ReserveUSD = 0
	want.Add(e1)
	e2 := es.At(2)
	e2.ReserveUSD = 0
	want.Add(e2)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n got %+v\nwant %+v", got, want)
	}
}

// TestAppendJSONAllocates: nothing beyond dst's growth.
func TestAppendJSONAllocates(t *testing.T) {
	es := storetest.FullRecord("r").AdmissionEvents
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = es.AppendJSON(buf[:0]) }); n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}

// BenchmarkAppendJSON: the three events of storetest.FullRecord; json.Marshal for comparison.
func BenchmarkAppendJSON(b *testing.B) {
	es := storetest.FullRecord("r").AdmissionEvents
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = es.AppendJSON(buf[:0])
		}
	})
	b.Run("reflect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := audit.MarshalReflect(es); err != nil {
				b.Fatal(err)
			}
		}
	})
}
