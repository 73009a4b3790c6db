package plan

import (
	"encoding/json"
	"strings"
	"testing"
)

// R-ORDER-8, contract.md POST /v1/route: the plan encodes with the contract's field names; a
// NaN score is null (JSON has no NaN); degraded_from and attempt_limit appear when they apply;
// empty lists are [].
func TestPlanJSON(t *testing.T) {
	no := false
	m := model(0, rt{name: "a", prio: 2, weight: 3}, rt{name: "b", price: usd(1, 1)})
	in := input(m)
	in.Strategy, in.Prefs.AllowFallbacks, in.Prefs.Ignore = StrategyLatency, &no, []string{"b"}
	var p Plan
	Build(&p, in, nil)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","resolved_model":"m","strategy":"balanced","degraded_from":"latency","session_key":"s","attempt_limit":1,` +
		`"candidates":[{"deployment":"a","provider":"a","model":"m","upstream_model":"up-a","priority":2,"weight":3,"band":0,"score":null}],` +
		`"dropped":[{"deployment":"b","model":"m","reason":"in provider.ignore"}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	// Through a pointer too, and a scored candidate keeps its number.
	in = input(m)
	Build(&p, in, nil)
	b, err = json.Marshal(&p)
	if err != nil || !strings.Contains(string(b), `"score":4`) || strings.Contains(string(b), "degraded_from") || strings.Contains(string(b), "attempt_limit") {
		t.Fatalf("%s %v", b, err)
	}
	var empty Plan
	if b, _ := json.Marshal(empty); !strings.Contains(string(b), `"candidates":[],"dropped":[]`) {
		t.Fatalf("empty plan %s", b)
	}
}
