package plan

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

type openSet map[string]bool

func (o openSet) Open(provider, deployment, model string) bool { return o[deployment] }

func route(dep string, d catalog.Dialect, prio int, price *catalog.Price) *catalog.Route {
	return &catalog.Route{Deployment: &catalog.Deployment{Name: dep, Provider: dep, Dialect: d, Priority: prio}, Model: "m", UpstreamModel: "m", Price: price, Weight: 1}
}

func names(p *Plan) string {
	s := ""
	for _, c := range p.Candidates {
		s += c.Route.Deployment.Name + " "
	}
	return s
}

// R-ORDER-2: cheapest blended price first (3:1 by default), unpriced after priced, equal prices by
// ascending priority (same band, R-ORDER-3). R-ADMIT-5: routes of the other dialect are admitted
// (translated); R-ADMIT-7: open routes are dropped with their reason.
func TestBuildOrder(t *testing.T) {
	m := &catalog.Model{ID: "m", Routes: []*catalog.Route{
		route("unpriced", catalog.OpenAI, 0, nil),
		route("dear", catalog.OpenAI, 0, &catalog.Price{InputPerMTokUSD: 3, OutputPerMTokUSD: 15}),
		route("cheap-p1", catalog.OpenAI, 1, &catalog.Price{InputPerMTokUSD: 1, OutputPerMTokUSD: 5}),
		route("cheap-p0", catalog.OpenAI, 0, &catalog.Price{InputPerMTokUSD: 1, OutputPerMTokUSD: 5}),
		route("input-cheap", catalog.OpenAI, 0, &catalog.Price{InputPerMTokUSD: 0.5, OutputPerMTokUSD: 9}), // 3*0.5+9 = 10.5 > 3+5 = 8
		route("other-dialect", catalog.Anthropic, 0, &catalog.Price{}),
		route("open", catalog.OpenAI, 1, &catalog.Price{}), // ties other-dialect: same band, priority after
	}}
	var p Plan
	Build(&p, Input{Resolution: catalog.Resolution{Requested: "m", Model: m}, Surface: catalog.OpenAI}, openSet{"open": true})
	if got, want := names(&p), "other-dialect cheap-p0 cheap-p1 input-cheap dear unpriced "; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	want := []Dropped{{"open", "m", ReasonCircuitOpen}}
	if fmt.Sprint(p.Dropped) != fmt.Sprint(want) {
		t.Fatalf("dropped %v", p.Dropped)
	}
	// 1:1 blend: input-cheap (9.5) is now dearer than dear? no: 3+15=18 > 9.5 > 6.
	Build(&p, Input{Resolution: catalog.Resolution{Requested: "m", Model: m}, Surface: catalog.OpenAI, Blend: Blend{1, 1}}, nil)
	if got, want := names(&p), "other-dialect open cheap-p0 cheap-p1 input-cheap dear unpriced "; got != want {
		t.Fatalf("1:1 order %q, want %q", got, want)
	}
}

// R-ADMIT: an empty pool is an error naming why, never a silent widening; only circuits -> 503
// "all deployments cooling down" (R-CIRCUIT-6).
func TestRefusal(t *testing.T) {
	m := &catalog.Model{ID: "m", Routes: []*catalog.Route{route("a", catalog.OpenAI, 0, nil)}}
	var p Plan
	Build(&p, Input{Resolution: catalog.Resolution{Requested: "m", Model: m}, Surface: catalog.OpenAI}, openSet{"a": true})
	fe := failure.From(p.Refusal())
	if fe.Class != failure.GatewayError || fe.Msg != MsgCoolingDown || fe.RetryAfter.Seconds() != 5 || fe.LimitKind != "health" {
		t.Fatalf("refusal %+v", fe)
	}
	Build(&p, Input{Resolution: catalog.Resolution{Requested: "m", Model: m}, Surface: catalog.Anthropic}, nil)
	if err := p.Refusal(); err != nil {
		t.Fatalf("a route of the other dialect is admitted (translated): %v", err)
	}
	Build(&p, Input{Resolution: catalog.Resolution{Requested: "m", Model: m}, Surface: catalog.OpenAI}, nil)
	if err := p.Refusal(); err != nil {
		t.Fatal(err)
	}
	var empty Plan
	Build(&empty, Input{Resolution: catalog.Resolution{Requested: "x", Model: &catalog.Model{ID: "x"}}, Surface: catalog.OpenAI}, nil)
	if fe := failure.From(empty.Refusal()); fe == nil || errors.Is(fe, nil) || fe.Class != failure.InvalidRequest {
		t.Fatalf("no routes: %v", fe)
	}
}

// BenchmarkBuild: a model with 10 routes, each strategy, with a session key (the affinity
// hash) and, for latency, measurements from Stats. Budget (issue 4): <= 2 µs and a handful of
// allocations; a reused Plan allocates nothing.
func BenchmarkBuild(b *testing.B) {
	m := &catalog.Model{ID: "m"}
	st := fakeStats{}
	for i := range 10 {
		name := fmt.Sprintf("d%d", i)
		m.Routes = append(m.Routes, route(name, catalog.OpenAI, i%3, &catalog.Price{InputPerMTokUSD: float64(10 - i), OutputPerMTokUSD: 1}))
		if i%4 != 0 { // some routes below MinSamples: placed at the median
			st[name] = RouteStats{TTFTMillis: float64(100 + 7*i), TTFTSamples: 50}
		}
	}
	for _, tc := range []struct{ name, strategy, key string }{
		{"price", StrategyPrice, ""},
		{"price/session", StrategyPrice, "session-key-0123456789"},
		{"latency/session", StrategyLatency, "session-key-0123456789"},
		{"balanced/session", StrategyBalanced, "session-key-0123456789"},
		{"priority/session", StrategyPriority, "session-key-0123456789"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var p Plan
			in := Input{Resolution: catalog.Resolution{Requested: "m", Model: m}, Surface: catalog.OpenAI,
				Strategy: tc.strategy, SessionKey: tc.key, Stats: st, Prefs: Preferences{Preferred: []string{"d3", "d7"}}}
			h := openSet{"d9": true}
			b.ReportAllocs()
			for b.Loop() {
				Build(&p, in, h)
			}
		})
	}
}

// BenchmarkBuildCircuits is BenchmarkBuild's price/session case with the gateway's own health
// (circuit.Set) instead of a map: every circuit closed, then one deployment's circuit open
// (cooling down); serial and from every core at once (the request path's case).
func BenchmarkBuildCircuits(b *testing.B) {
	m := &catalog.Model{ID: "m"}
	for i := range 10 {
		m.Routes = append(m.Routes, route(fmt.Sprintf("d%d", i), catalog.OpenAI, i%3, &catalog.Price{InputPerMTokUSD: float64(10 - i), OutputPerMTokUSD: 1}))
	}
	in := Input{Resolution: catalog.Resolution{Requested: "m", Model: m}, Surface: catalog.OpenAI,
		Strategy: StrategyPrice, SessionKey: "session-key-0123456789", Prefs: Preferences{Preferred: []string{"d3", "d7"}}}
	for _, open := range []bool{false, true} {
		set := circuit.NewSet(circuit.Settings{Failures: 1, Cooldown: time.Hour}, circuit.Settings{})
		for _, rt := range m.Routes { // every circuit created, as after the first requests
			tk, err := set.Admit(rt.Deployment.PauseScope(), rt.Deployment.Name, rt.Model)
			if err != nil {
				b.Fatal(err)
			}
			if open && rt.Deployment.Name == "d9" {
				tk.Done(&failure.Error{Class: failure.UpstreamError})
			} else {
				tk.Done(nil)
			}
		}
		name := "closed"
		if open {
			name = "one-open"
		}
		b.Run(name, func(b *testing.B) {
			var p Plan
			b.ReportAllocs()
			for b.Loop() {
				Build(&p, in, set)
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var p Plan
				for pb.Next() {
					Build(&p, in, set)
				}
			})
		})
	}
}
