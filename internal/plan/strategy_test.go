package plan

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// fakeStats serves RouteStats by deployment name.
type fakeStats map[string]RouteStats

func (f fakeStats) Route(deployment, model string) (RouteStats, bool) {
	rs, ok := f[deployment]
	return rs, ok
}

func lat(ms float64) RouteStats  { return RouteStats{TTFTMillis: ms, TTFTSamples: MinSamples} }
func tps(v float64) RouteStats   { return RouteStats{TokensPerSec: v, ThroughputSamples: MinSamples} }
func ratio(r float64) RouteStats { return RouteStats{SuccessRatio: r, Samples: MinSamples} }
func few(rs RouteStats) RouteStats {
	rs.TTFTSamples, rs.ThroughputSamples, rs.Samples = MinSamples-1, MinSamples-1, MinSamples-1
	return rs
}

// banded renders the plan as "name/band" in order.
func banded(p *Plan) string {
	var b strings.Builder
	for _, c := range p.Candidates {
		fmt.Fprintf(&b, "%s/%d ", c.Route.Deployment.Name, c.Band)
	}
	return strings.TrimSpace(b.String())
}

// R-ORDER-1..4: each strategy orders by its metric in its direction; ties within the tolerance
// of R-ORDER-3 share a band, ordered inside by ascending priority; missing metrics go to the
// median (R-ORDER-4) or, for price, last.
func TestStrategies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy string
		routes   []rt
		stats    fakeStats
		want     string // name/band in order
		scores   string // %g of each Score in order
	}{
		{name: "price: 2% band, priority inside", strategy: StrategyPrice,
			routes: []rt{{name: "x", price: usd(10, 0)}, {name: "y", price: usd(10.19, 0), prio: -1}, {name: "z", price: usd(10.21, 0)}, {name: "u"}, {name: "v", price: usd(5, 0)}},
			want:   "v/0 y/1 x/1 z/2 u/3", scores: "15 30.57 30 30.63 NaN"},
		{name: "latency: 20% band anchored at the leader", strategy: StrategyLatency,
			routes: []rt{{name: "a"}, {name: "b"}, {name: "c"}, {name: "d"}},
			stats:  fakeStats{"a": lat(100), "b": lat(119), "c": lat(121), "d": lat(141)},
			want:   "a/0 b/0 c/1 d/1", scores: "100 119 121 141"},
		{name: "throughput: descending, 20% band", strategy: StrategyThroughput,
			routes: []rt{{name: "a", prio: 1}, {name: "b"}, {name: "c"}},
			stats:  fakeStats{"a": tps(100), "b": tps(81), "c": tps(79)},
			want:   "b/0 a/0 c/1", scores: "81 100 79"},
		{name: "reliability: 1 point absolute", strategy: StrategyReliability,
			routes: []rt{{name: "a", prio: 2}, {name: "b", prio: 1}, {name: "c"}},
			stats:  fakeStats{"a": ratio(0.99), "b": ratio(0.98), "c": ratio(0.979)},
			want:   "b/0 a/0 c/1", scores: "0.98 0.99 0.979"},
		{name: "latency: too few samples at the median", strategy: StrategyLatency,
			routes: []rt{{name: "new"}, {name: "a"}, {name: "b"}, {name: "c"}},
			stats:  fakeStats{"new": few(lat(1)), "a": lat(100), "b": lat(300), "c": lat(1000)},
			want:   "a/0 new/1 b/1 c/2", scores: "100 NaN 300 1000"},
		{name: "reliability: median of an even count", strategy: StrategyReliability,
			routes: []rt{{name: "new"}, {name: "a"}, {name: "b"}},
			stats:  fakeStats{"a": ratio(0.9), "b": ratio(0.5)},
			want:   "a/0 new/1 b/2", scores: "0.9 NaN 0.5"},
		{name: "priority: tiers", strategy: StrategyPriority,
			routes: []rt{{name: "a", prio: 2}, {name: "b", prio: 0}, {name: "c", prio: 1}},
			want:   "b/0 c/1 a/2", scores: "NaN NaN NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(model(0, tc.routes...))
			in.Strategy, in.Blend = tc.strategy, Blend{Input: 3, Output: 1}
			if tc.stats != nil {
				in.Stats = tc.stats
			}
			var p Plan
			Build(&p, in, nil)
			if got := banded(&p); got != tc.want {
				t.Errorf("order %q, want %q", got, tc.want)
			}
			var sc []string
			for _, c := range p.Candidates {
				sc = append(sc, fmt.Sprintf("%.6g", c.Score))
			}
			if got := strings.Join(sc, " "); got != tc.scores {
				t.Errorf("scores %q, want %q", got, tc.scores)
			}
			if p.Strategy != tc.strategy || p.DegradedFrom != "" {
				t.Errorf("strategy %q degraded from %q", p.Strategy, p.DegradedFrom)
			}
		})
	}
}

// R-ORDER-4: a latency, throughput or reliability pass where no candidate has enough samples
// degrades to balanced, and the plan says so.
func TestDegradeToBalanced(t *testing.T) {
	m := model(0, rt{name: "a", prio: 0}, rt{name: "b", prio: 5})
	for _, s := range []string{StrategyLatency, StrategyThroughput, StrategyReliability} {
		for _, st := range []Stats{nil, fakeStats{}, fakeStats{"a": few(lat(10)), "b": few(tps(10))}} {
			in := input(m)
			in.Strategy, in.Stats = s, st
			var p Plan
			Build(&p, in, nil)
			if p.Strategy != StrategyBalanced || p.DegradedFrom != s {
				t.Fatalf("%s with %v: strategy %q degraded from %q", s, st, p.Strategy, p.DegradedFrom)
			}
			for _, c := range p.Candidates {
				if c.Band != 0 || !math.IsNaN(c.Score) {
					t.Fatalf("balanced is one band without scores: %s", banded(&p))
				}
			}
		}
	}
}

// R-ORDER-6, R-ORDER-1: provider.sort overrides the strategy; balanced ignores priority (one
// band); provider.order goes first in its order, each entry its own band; a preferred set splits
// the rest unless it matches none or all; allow_fallbacks false keeps one attempt.
func TestPreferences(t *testing.T) {
	m := model(0,
		rt{name: "a1", provider: "acme", price: usd(1, 0)},
		rt{name: "a2", provider: "acme", price: usd(2, 0)},
		rt{name: "b", provider: "beta", price: usd(3, 0)},
		rt{name: "c", provider: "corp", price: usd(4, 0)},
		rt{name: "d", provider: "dyn", price: usd(5, 0)},
	)
	no := false
	for _, tc := range []struct {
		name  string
		prefs Preferences
		want  string
		limit int
	}{
		{name: "none", want: "a1/0 a2/1 b/2 c/3 d/4"},
		{name: "order", prefs: Preferences{Order: []string{"d", "acme", "nobody"}}, want: "d/0 a1/1 a2/2 b/3 c/4"},
		{name: "preferred", prefs: Preferences{Preferred: []string{"corp", "b"}}, want: "b/0 c/1 a1/2 a2/3 d/4"},
		{name: "order then preferred", prefs: Preferences{Order: []string{"c"}, Preferred: []string{"dyn"}}, want: "c/0 d/1 a1/2 a2/3 b/4"},
		{name: "preferred matching none", prefs: Preferences{Preferred: []string{"zeta"}}, want: "a1/0 a2/1 b/2 c/3 d/4"},
		{name: "preferred matching all", prefs: Preferences{Preferred: []string{"acme", "beta", "corp", "dyn"}}, want: "a1/0 a2/1 b/2 c/3 d/4"},
		{name: "no fallbacks", prefs: Preferences{AllowFallbacks: &no, Ignore: []string{"a1"}}, want: "a2/0 b/1 c/2 d/3", limit: 1},
		{name: "sort overrides", prefs: Preferences{Sort: StrategyPriority}, want: "a1/0 a2/0 b/0 c/0 d/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(m)
			in.Prefs = tc.prefs
			var p Plan
			Build(&p, in, nil)
			if tc.name == "sort overrides" {
				if p.Strategy != StrategyPriority || len(p.Candidates) != 5 || p.Candidates[4].Band != 0 {
					t.Fatalf("sort: %s %s", p.Strategy, banded(&p))
				}
				return
			}
			if got := banded(&p); got != tc.want {
				t.Errorf("order %q, want %q", got, tc.want)
			}
			if p.AttemptLimit != tc.limit {
				t.Errorf("attempt limit %d, want %d", p.AttemptLimit, tc.limit)
			}
		})
	}
}

// R-ORDER-1: balanced is weighted random regardless of priority (one band); priority keeps
// tiers. Checked over many sessions: a priority-9 route comes first about half the time under
// balanced and never under priority.
func TestBalancedIgnoresPriority(t *testing.T) {
	m := model(0, rt{name: "a", prio: 0}, rt{name: "b", prio: 9})
	firstB := map[string]int{}
	for _, s := range []string{StrategyBalanced, StrategyPriority} {
		for i := range 2000 {
			in := input(m)
			in.Strategy, in.SessionKey = s, fmt.Sprint("session-", i)
			var p Plan
			Build(&p, in, nil)
			if p.Candidates[0].Route.Deployment.Name == "b" {
				firstB[s]++
			}
		}
	}
	if firstB[StrategyPriority] != 0 || firstB[StrategyBalanced] < 900 || firstB[StrategyBalanced] > 1100 {
		t.Fatalf("b first: %v of 2000", firstB)
	}
}
