package plan

import (
	"testing"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestFailoverRegions: issue 11 item 6, seed 003: after a failure the untried candidates are
// reordered by the class's rule, stably, only inside runs of one kind (reserved, BYOK, house).
func TestFailoverRegions(t *testing.T) {
	build := func() *Plan {
		m := model(0, rt{name: "a", price: usd(1, 1)}, rt{name: "b", price: usd(2, 2)}, rt{name: "c", price: usd(3, 3)},
			rt{name: "d", price: usd(4, 4)}, rt{name: "e", price: usd(5, 5)})
		for i, r := range []string{"us", "eu", "us", "", "eu"} {
			m.Routes[i].Region = r
		}
		var p Plan
		Build(&p, input(m), nil)
		if cands(&p) != "a b c d e" {
			t.Fatalf("plan %s", cands(&p))
		}
		return &p
	}
	for _, tc := range []struct {
		class failure.Class
		want  string
	}{
		{failure.UpstreamRateLimited, "a c b d e"}, // same region (us) first
		{failure.UpstreamAuth, "a c b d e"},
		{failure.UpstreamError, "a b d e c"}, // another region first ("" is not us)
		{failure.UpstreamTimeout, "a b d e c"},
		{failure.ContentPolicy, "a b c d e"}, // no rule: unchanged (it stops anyway)
	} {
		p := build()
		p.Failover(1, p.Candidates[0].Route, tc.class)
		if got := cands(p); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.class, got, tc.want)
		}
	}
	// A failed route without a region changes nothing.
	p := build()
	p.Failover(4, p.Candidates[3].Route, failure.UpstreamError)
	if got := cands(p); got != "a b c d e" {
		t.Errorf("no region: %s", got)
	}
	// Runs of one kind: b alone is a BYOK candidate, so the us route c does not move ahead of
	// it after a rate limit of a (it would with one run: "a c b d e").
	p = build()
	p.Candidates[1].BYOK = true
	p.Failover(1, p.Candidates[0].Route, failure.UpstreamRateLimited)
	if got := cands(p); got != "a b c d e" {
		t.Errorf("kinds: %s, want a b c d e", got)
	}
	if n := testing.AllocsPerRun(100, func() { p.Failover(1, p.Candidates[0].Route, failure.UpstreamError) }); n != 0 {
		t.Errorf("Failover allocates %.0f times", n)
	}
}
