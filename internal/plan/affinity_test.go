package plan

import (
	"fmt"
	"math"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// draws builds n plans over m (session keys "k0".."k<n-1>", or random seeds when random) and
// counts how often each deployment comes first and how often the pair (first, second) occurs.
func draws(m *catalog.Model, strategy string, n int, random bool) (first map[string]int, pairs map[[2]string]int) {
	first, pairs = map[string]int{}, map[[2]string]int{}
	var p Plan
	for i := range n {
		in := input(m)
		in.Strategy, in.SessionKey = strategy, fmt.Sprint("k", i)
		if random {
			in.SessionKey = ""
		}
		Build(&p, in, nil)
		first[p.Candidates[0].Route.Deployment.Name]++
		pairs[[2]string{p.Candidates[0].Route.Deployment.Name, p.Candidates[1].Route.Deployment.Name}]++
	}
	return first, pairs
}

// R-ORDER-3, R-ORDER-5: inside a band, a route is first with probability weight/sum of
// weights, whether seeded by session keys or at random. 10,000 draws; tolerance 0.015 absolute
// (over 4.5 standard deviations for every p here: sd <= 0.005).
func TestWeightsInBand(t *testing.T) {
	m := model(0,
		rt{name: "w1", weight: 1, price: usd(10, 0)},
		rt{name: "w2", weight: 2, price: usd(10.1, 0)}, // within 2%: same band
		rt{name: "w7", weight: 7, price: usd(10, 0)},
		rt{name: "out", weight: 100, price: usd(11, 0)}, // next band: never first
	)
	const n, tol = 10000, 0.015
	for _, random := range []bool{false, true} {
		first, pairs := draws(m, StrategyPrice, n, random)
		for name, w := range map[string]float64{"w1": 0.1, "w2": 0.2, "w7": 0.7, "out": 0} {
			if got := float64(first[name]) / n; math.Abs(got-w) > tol {
				t.Errorf("random=%v: %s first %.3f, want %.2f±%.3f", random, name, got, w, tol)
			}
		}
		// Sampling without replacement: P(w7 then w2) = 0.7 × 2/3.
		if got := float64(pairs[[2]string{"w7", "w2"}]) / n; math.Abs(got-0.7*2/3) > tol {
			t.Errorf("random=%v: w7 then w2 %.3f, want %.3f", random, got, 0.7*2/3)
		}
	}
}

// R-ORDER-3: equal-weight routes tying in a band share first place evenly, for every strategy
// with bands (latency here, priority tiers too), and the next band only follows.
func TestBandFairness(t *testing.T) {
	m := model(0, rt{name: "a"}, rt{name: "b"}, rt{name: "c"}, rt{name: "slow"})
	st := fakeStats{"a": lat(100), "b": lat(105), "c": lat(110), "slow": lat(500)}
	const n, tol = 10000, 0.015
	counts := map[string]int{}
	var p Plan
	for i := range n {
		in := input(m)
		in.Strategy, in.Stats, in.SessionKey = StrategyLatency, st, fmt.Sprint("conversation/", i)
		Build(&p, in, nil)
		counts[p.Candidates[0].Route.Deployment.Name]++
		if last := p.Candidates[3]; last.Route.Deployment.Name != "slow" || last.Band != 1 {
			t.Fatalf("slow route not alone in the last band: %s", banded(&p))
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		if got := float64(counts[name]) / n; math.Abs(got-1.0/3) > tol {
			t.Errorf("%s first %.3f, want 1/3±%.3f", name, got, tol)
		}
	}
}

// R-ORDER-5: one session key gives the same order on every turn; the order is not a function of
// the key alone (different routes are uncorrelated), and affinity never keeps a session on a
// route that is dropped: with its first route open, the session fails over to the others.
func TestAffinity(t *testing.T) {
	m := model(0, rt{name: "a"}, rt{name: "b"}, rt{name: "c"}, rt{name: "d"})
	in := input(m)
	in.Strategy, in.SessionKey = StrategyBalanced, "prompt-cache-key-1"
	var p, q Plan
	Build(&p, in, nil)
	for range 20 {
		Build(&q, in, nil)
		if cands(&q) != cands(&p) {
			t.Fatalf("same session, different order: %q then %q", cands(&p), cands(&q))
		}
	}
	firstName := p.Candidates[0].Route.Deployment.Name
	Build(&q, in, openSet{firstName: true})
	if len(q.Candidates) != 3 || cands(&q) != cands(&p)[len(firstName)+1:] {
		t.Fatalf("with %s open: %q, want the session's order without it (%q)", firstName, cands(&q), cands(&p))
	}
	// Retries never land on the route that failed: every route appears once.
	seen := map[*catalog.Route]bool{}
	for _, c := range p.Candidates {
		if seen[c.Route] {
			t.Fatalf("route twice in %q", cands(&p))
		}
		seen[c.Route] = true
	}
}

// FuzzAffinity: for any session key and weights, Build is deterministic, the candidates are a
// permutation of the routes, bands never decrease and priority never decreases inside a band,
// and a route of weight 0 never precedes a positive-weight route of its band and priority.
func FuzzAffinity(f *testing.F) {
	f.Add("k", uint8(1), uint8(2), uint8(3), uint8(0), uint8(0))
	f.Add("", uint8(0), uint8(0), uint8(0), uint8(1), uint8(2))
	f.Add("a\xffb", uint8(9), uint8(0), uint8(1), uint8(4), uint8(3))
	f.Fuzz(func(t *testing.T, key string, w0, w1, w2 uint8, strat, prio uint8) {
		strategies := []string{StrategyPrice, StrategyBalanced, StrategyPriority, StrategyLatency, StrategyReliability}
		m := model(0,
			rt{name: "a", weight: float64(w0%5) + 0.5*float64(w0/128), prio: int(prio % 2)},
			rt{name: "b", weight: float64(w1 % 5), prio: int(prio % 3)},
			rt{name: "c", weight: float64(w2 % 5), prio: 0},
			rt{name: "d", weight: 1, prio: 1, price: usd(1, 0)},
		)
		m.Routes[1].Weight = float64(w1 % 5) // 0 allowed
		in := input(m)
		in.Strategy, in.SessionKey = strategies[int(strat)%len(strategies)], key
		in.Stats = fakeStats{"a": lat(100), "b": lat(110), "c": few(lat(1)), "d": ratio(0.5)}
		var p, q Plan
		Build(&p, in, nil)
		Build(&q, in, nil)
		if key != "" && cands(&p) != cands(&q) {
			t.Fatalf("key %q: %q then %q", key, cands(&p), cands(&q))
		}
		if len(p.Candidates) != 4 {
			t.Fatalf("%d candidates", len(p.Candidates))
		}
		seen := map[string]bool{}
		for i, c := range p.Candidates {
			name := c.Route.Deployment.Name
			if seen[name] {
				t.Fatalf("%s twice: %s", name, banded(&p))
			}
			seen[name] = true
			if i == 0 {
				continue
			}
			prev := p.Candidates[i-1]
			if c.Band < prev.Band || c.Band > prev.Band+1 {
				t.Fatalf("bands out of order: %s", banded(&p))
			}
			samePrio := p.Strategy == StrategyBalanced || c.Route.Deployment.Priority == prev.Route.Deployment.Priority
			if c.Band == prev.Band && p.Strategy != StrategyBalanced && c.Route.Deployment.Priority < prev.Route.Deployment.Priority {
				t.Fatalf("priority decreases inside band: %s", banded(&p))
			}
			if c.Band == prev.Band && samePrio && prev.Weight <= 0 && c.Weight > 0 {
				t.Fatalf("weight 0 before weight %g: %s", c.Weight, banded(&p))
			}
		}
	})
}

// FuzzAffinityFairness: sessions whose keys share any prefix (the fuzzed one; keys that differ
// only in a counter, as derived keys do) still spread evenly over two equal routes of one band:
// of 400 sessions, each route is first 140..260 times (p = 0.5: 6 standard deviations).
func FuzzAffinityFairness(f *testing.F) {
	f.Add("")
	f.Add("system prompt: you are")
	f.Add("\x00\x00\x00")
	m := model(0, rt{name: "alpha"}, rt{name: "beta"})
	f.Fuzz(func(t *testing.T, prefix string) {
		var p Plan
		n := 0
		for i := range 400 {
			in := input(m)
			in.Strategy, in.SessionKey = StrategyBalanced, prefix+fmt.Sprint(i)
			Build(&p, in, nil)
			if p.Candidates[0].Route.Deployment.Name == "alpha" {
				n++
			}
		}
		if n < 140 || n > 260 {
			t.Fatalf("prefix %q: alpha first %d of 400", prefix, n)
		}
	})
}
