package stats

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
)

var _ plan.Stats = (*Collector)(nil)

// clock is an injected clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

var epoch = time.Date(2026, 11, 30, 10, 30, 0, 0, time.UTC)

// run starts a Collector with the clock inside a synctest bubble, calls f, then stops Run and
// checks it returned. record(o...) queues and waits until Run has applied them.
func run(t *testing.T, o Options, f func(c *Collector, clk *clock, record func(...Observation))) {
	synctest.Test(t, func(t *testing.T) {
		clk := &clock{now: epoch}
		if o.Now == nil {
			o.Now = clk.Now
		}
		c := New(o)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- c.Run(ctx) }()
		synctest.Wait() // Run is waiting for observations
		f(c, clk, func(obs ...Observation) {
			for _, x := range obs {
				c.Record(x)
			}
			synctest.Wait() // Run is blocked on an empty queue: everything is applied
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func n(k int, o Observation) []Observation {
	out := make([]Observation, k)
	for i := range out {
		out[i] = o
	}
	return out
}

func cat(parts ...[]Observation) []Observation {
	var out []Observation
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// R-ORDER-4: latency is the mean TTFT of successes, throughput output tokens per second after
// the first token, reliability successes over successes plus provider-caused failures; caller
// faults, cancellations and the gateway's own refusals are not in any denominator; upstream
// 429s count against reliability.
func TestRouteStats(t *testing.T) {
	ok := Observation{Deployment: "d", Model: "m", TTFT: 100 * time.Millisecond, Duration: 2100 * time.Millisecond, OutputTokens: 100}
	slow := ok
	slow.TTFT, slow.Duration, slow.OutputTokens = 300*time.Millisecond, 4300*time.Millisecond, 100
	fail := func(c failure.Class) Observation { return Observation{Deployment: "d", Model: "m", Outcome: c} }
	for _, tc := range []struct {
		name string
		obs  []Observation
		want plan.RouteStats
		ok   bool
	}{
		{name: "empty", ok: false},
		{name: "successes", obs: []Observation{ok, slow}, ok: true,
			want: plan.RouteStats{TTFTMillis: 200, TTFTSamples: 2, TokensPerSec: 200.0 / 6, ThroughputSamples: 2, SuccessRatio: 1, Samples: 2}},
		{name: "provider failures count", obs: cat(n(3, ok), []Observation{fail(failure.UpstreamError), fail(failure.UpstreamRateLimited),
			fail(failure.UpstreamTimeout), fail(failure.UpstreamTruncated), fail(failure.UpstreamAuth)}), ok: true,
			want: plan.RouteStats{TTFTMillis: 100, TTFTSamples: 3, TokensPerSec: 50, ThroughputSamples: 3, SuccessRatio: 3.0 / 8, Samples: 8}},
		{name: "caller faults excluded", obs: cat(n(4, ok), []Observation{fail(failure.InvalidRequest), fail(failure.ContextOverflow),
			fail(failure.ContentPolicy), fail(failure.RequestTooLarge), fail(failure.Cancelled), fail(failure.RateLimited), fail(failure.GatewayError)}), ok: true,
			want: plan.RouteStats{TTFTMillis: 100, TTFTSamples: 4, TokensPerSec: 50, ThroughputSamples: 4, SuccessRatio: 1, Samples: 4}},
		{name: "no ttft: whole duration", obs: []Observation{{Deployment: "d", Model: "m", Duration: time.Second, OutputTokens: 30}}, ok: true,
			want: plan.RouteStats{TokensPerSec: 30, ThroughputSamples: 1, SuccessRatio: 1, Samples: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run(t, Options{}, func(c *Collector, _ *clock, record func(...Observation)) {
				record(tc.obs...)
				got, ok := c.Route("d", "m")
				if ok != tc.ok || !near(got, tc.want) {
					t.Fatalf("Route = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
				}
				if dep, _ := c.Route("d", ""); !near(dep, tc.want) {
					t.Fatalf("deployment %+v, want %+v", dep, tc.want)
				}
			})
		})
	}
}

func near(a, b plan.RouteStats) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return eq(a.TTFTMillis, b.TTFTMillis) && eq(a.TokensPerSec, b.TokensPerSec) && eq(a.SuccessRatio, b.SuccessRatio) &&
		a.TTFTSamples == b.TTFTSamples && a.ThroughputSamples == b.ThroughputSamples && a.Samples == b.Samples
}

// R-ORDER-4: the window is 24 hours (the current hour and the 23 before): a sample counts for
// 23 more hours after its own and is gone when its bucket leaves the window, also when nothing
// new arrives (the read recomputes); a ring slot reused by a later hour starts from zero.
func TestWindowRollOver(t *testing.T) {
	run(t, Options{}, func(c *Collector, clk *clock, record func(...Observation)) {
		o := Observation{Deployment: "d", Model: "m", TTFT: 100 * time.Millisecond}
		record(o)
		clk.Add(23 * time.Hour) // 09:30 the next day: the first bucket is still inside
		if rs, ok := c.Route("d", "m"); !ok || rs.TTFTSamples != 1 {
			t.Fatalf("after 23 h: %+v %v", rs, ok)
		}
		clk.Add(time.Hour) // 10:30: the 10:00 bucket of yesterday is out
		if rs, ok := c.Route("d", "m"); ok || rs.TTFTSamples != 0 {
			t.Fatalf("after 24 h: %+v %v", rs, ok)
		}
		// The same ring slot now holds today's 10:00: only the new sample.
		o.TTFT = 300 * time.Millisecond
		record(o)
		if rs, _ := c.Route("d", "m"); rs.TTFTSamples != 1 || rs.TTFTMillis != 300 {
			t.Fatalf("reused slot: %+v", rs)
		}
		// An observation stamped earlier than the window is ignored; one from the future
		// counts now.
		record(Observation{Deployment: "d", Model: "m", At: clk.Now().Add(-25 * time.Hour), TTFT: time.Second},
			Observation{Deployment: "d", Model: "m", At: clk.Now().Add(5 * time.Hour), TTFT: 100 * time.Millisecond})
		if rs, _ := c.Route("d", "m"); rs.TTFTSamples != 2 || rs.TTFTMillis != 200 {
			t.Fatalf("stamped: %+v", rs)
		}
	})
}

// R-CIRCUIT-8, R-CIRCUIT-4: uptime is shown from 100 counted requests; upstream 429s are not
// counted, other provider failures are; per deployment it spans the deployment's models.
func TestUptime(t *testing.T) {
	run(t, Options{}, func(c *Collector, _ *clock, record func(...Observation)) {
		ok := Observation{Deployment: "d", Model: "m"}
		bad := Observation{Deployment: "d", Model: "m", Outcome: failure.UpstreamError}
		limited := Observation{Deployment: "d", Model: "m", Outcome: failure.UpstreamRateLimited}
		caller := Observation{Deployment: "d", Model: "m", Outcome: failure.InvalidRequest}
		record(cat(n(89, ok), n(10, bad), n(50, limited), n(50, caller))...)
		if r, shown := c.Uptime("d", "m"); shown || r != 0 {
			t.Fatalf("99 counted: %v %v", r, shown)
		}
		record(ok)
		if r, shown := c.Uptime("d", "m"); !shown || r != 0.9 {
			t.Fatalf("100 counted: %v %v, want 0.9", r, shown)
		}
		if rs, _ := c.Route("d", "m"); rs.Samples != 150 { // 429s are in the reliability denominator
			t.Fatalf("reliability samples %d", rs.Samples)
		}
		record(n(100, Observation{Deployment: "d", Model: "other", Outcome: failure.UpstreamTimeout})...)
		if r, shown := c.Uptime("d", ""); !shown || r != 0.45 {
			t.Fatalf("deployment uptime %v %v, want 0.45", r, shown)
		}
		if _, shown := c.Uptime("nobody", ""); shown {
			t.Fatal("unknown deployment shown")
		}
	})
}

// Bounded memory: entries stop at MaxRoutes (observations for new ones are dropped and
// counted), each entry is a fixed ring; Record never blocks: a full queue drops and counts.
func TestBounds(t *testing.T) {
	run(t, Options{MaxRoutes: 6}, func(c *Collector, clk *clock, record func(...Observation)) {
		for i := range 10 {
			record(Observation{Deployment: fmt.Sprint("d", i), Model: "m"})
		}
		if got := len(*c.routes.Load()); got != 6 {
			t.Fatalf("%d entries, want 6", got)
		}
		if c.Dropped() != 7 { // d3..d9
			t.Fatalf("dropped %d", c.Dropped())
		}
		for range 72 { // three days of traffic to one route: still one ring of 24
			record(Observation{Deployment: "d0", Model: "m"})
			clk.Add(time.Hour)
		}
		if rs, _ := c.Route("d0", "m"); rs.Samples != 23 { // 24 hours minus the empty current one
			t.Fatalf("samples %d", rs.Samples)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		c := New(Options{QueueSize: 2})
		for range 5 {
			c.Record(Observation{Deployment: "d", Model: "m"}) // no Run: must not block
		}
		if c.Dropped() != 3 {
			t.Fatalf("dropped %d, want 3", c.Dropped())
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := c.Run(ctx); err != nil { // drains what is queued, then returns
			t.Fatal(err)
		}
		if rs, _ := c.Route("d", "m"); rs.Samples != 2 {
			t.Fatalf("drained %d", rs.Samples)
		}
	})
}

// Run has one owner: a second Run returns an error at once.
func TestRunOnce(t *testing.T) {
	run(t, Options{}, func(c *Collector, _ *clock, _ func(...Observation)) {
		if err := c.Run(context.Background()); err == nil {
			t.Fatal("second Run did not fail")
		}
	})
}

// The stats drive the plan (R-ORDER-4): the latency strategy orders by the recorded TTFT once
// routes have plan.MinSamples; before that it degrades to balanced.
func TestDrivesPlan(t *testing.T) {
	run(t, Options{}, func(c *Collector, _ *clock, record func(...Observation)) {
		m := &catalog.Model{ID: "m"}
		for _, d := range []string{"fast", "slow"} {
			m.Routes = append(m.Routes, &catalog.Route{Deployment: &catalog.Deployment{Name: d, Provider: d, Dialect: catalog.OpenAI}, Model: "m", Weight: 1})
		}
		in := plan.Input{Resolution: catalog.Resolution{Requested: "m", Model: m}, Strategy: plan.StrategyLatency, Stats: c}
		var p plan.Plan
		plan.Build(&p, in, nil)
		if p.Strategy != plan.StrategyBalanced || p.DegradedFrom != plan.StrategyLatency {
			t.Fatalf("no samples: %s from %q", p.Strategy, p.DegradedFrom)
		}
		record(cat(n(plan.MinSamples, Observation{Deployment: "slow", Model: "m", TTFT: time.Second}),
			n(plan.MinSamples, Observation{Deployment: "fast", Model: "m", TTFT: 100 * time.Millisecond}))...)
		plan.Build(&p, in, nil)
		if p.Strategy != plan.StrategyLatency || p.Candidates[0].Route.Deployment.Name != "fast" || p.Candidates[0].Score != 100 {
			t.Fatalf("with samples: %s %+v", p.Strategy, p.Candidates)
		}
	})
}

func BenchmarkRoute(b *testing.B) {
	c := New(Options{})
	for i := range 100 {
		c.apply(Observation{Deployment: fmt.Sprint("d", i%10), Model: "m", TTFT: time.Duration(i) * time.Millisecond, Duration: time.Second, OutputTokens: 10})
	}
	c.publish()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Route("d3", "m")
		}
	})
}

func BenchmarkRecord(b *testing.B) {
	c := New(Options{QueueSize: 1 << 16})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	o := Observation{Deployment: "d", Model: "m", TTFT: time.Millisecond, Duration: time.Second, OutputTokens: 10}
	b.ReportAllocs()
	for b.Loop() {
		c.Record(o)
	}
	cancel()
	<-done
}
