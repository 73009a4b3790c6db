package stats

import (
	"math"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestSummary: Summary carries the window routing reads, the uptime exactly as Uptime gives
// it (null below 100 counted requests, R-CIRCUIT-8), the counted requests (upstream 429s and
// caller faults excluded), and TTFT and duration quantiles within the histogram's bin width
// (a factor of √2).
func TestSummary(t *testing.T) {
	run(t, Options{}, func(c *Collector, clk *clock, record func(...Observation)) {
		if _, ok := c.Summary("d", "m"); ok {
			t.Fatal("a route never observed has a summary")
		}
		// 98 successes: TTFT 10..107 ms, durations 100..1070 ms; one 500, one 429, one caller fault
		var obs []Observation
		for i := range 98 {
			obs = append(obs, Observation{Deployment: "d", Model: "m", TTFT: time.Duration(10+i) * time.Millisecond,
				Duration: time.Duration(100+10*i) * time.Millisecond, OutputTokens: 10})
		}
		obs = append(obs, Observation{Deployment: "d", Model: "m", Outcome: failure.UpstreamError},
			Observation{Deployment: "d", Model: "m", Outcome: failure.UpstreamRateLimited},
			Observation{Deployment: "d", Model: "m", Outcome: failure.InvalidRequest})
		record(obs...)
		s, ok := c.Summary("d", "m")
		if !ok || s.Counted != 99 || s.HasUptime {
			t.Fatalf("at 99 counted: %+v %v; want counted 99 and no uptime", s, ok)
		}
		if _, ok := c.Uptime("d", "m"); ok {
			t.Fatal("Uptime shown below 100 counted requests")
		}
		if rs, _ := c.Route("d", "m"); rs != s.Route {
			t.Errorf("Summary.Route %+v, Route %+v", s.Route, rs)
		}
		near := func(what string, got, want float64) {
			t.Helper()
			if got < want/math.Sqrt2 || got > want*math.Sqrt2 {
				t.Errorf("%s = %.2f, want %.2f within a factor of √2", what, got, want)
			}
		}
		if s.TTFT.N != 98 || s.Latency.N != 98 {
			t.Fatalf("samples: %+v %+v", s.TTFT, s.Latency)
		}
		if math.Abs(s.TTFT.Mean-58.5) > 1e-9 || math.Abs(s.Latency.Mean-585) > 1e-9 {
			t.Errorf("means %v %v, want 58.5 and 585 exactly", s.TTFT.Mean, s.Latency.Mean)
		}
		near("TTFT p50", s.TTFT.P50, 58.5)
		near("TTFT p99", s.TTFT.P99, 107)
		near("latency p50", s.Latency.P50, 585)
		near("latency p99", s.Latency.P99, 1070)
		if s.TTFT.P50 > s.TTFT.P99 || s.Latency.P50 > s.Latency.P99 {
			t.Errorf("p50 above p99: %+v %+v", s.TTFT, s.Latency)
		}
		record(Observation{Deployment: "d", Model: "m", TTFT: time.Millisecond, Duration: 2 * time.Millisecond})
		s, _ = c.Summary("d", "m")
		u, ok := c.Uptime("d", "m")
		if !s.HasUptime || !ok || s.Uptime != u || s.Counted != 100 || math.Abs(u-0.99) > 1e-9 {
			t.Fatalf("at 100 counted: summary %+v, Uptime %v %v; want 0.99 from both", s, u, ok)
		}
		if d, ok := c.Summary("d", ""); !ok || d.Counted != 100 || d.Uptime != s.Uptime {
			t.Errorf("the deployment's summary: %+v %v", d, ok)
		}
	})
}

// TestQuantilesBins: each sample lands in the bin whose bounds hold it, and the quantile of one
// repeated value is that value's bin (within its width).
func TestQuantilesBins(t *testing.T) {
	for _, d := range []time.Duration{time.Microsecond, 999 * time.Microsecond, time.Millisecond, 1500 * time.Microsecond,
		7 * time.Millisecond, time.Second, 3 * time.Minute, time.Hour} {
		i := histBin(d)
		lo, hi := binBounds(i)
		ms := float64(d) / float64(time.Millisecond)
		if ms < lo || (ms >= hi && i != histBins-1) {
			t.Errorf("%v in bin %d [%v, %v)", d, i, lo, hi)
		}
		var h [histBins]uint32
		h[i] = 10
		q := quantiles(&h, 10, 10*ms)
		if q.P50 < lo || (q.P50 > hi && i != histBins-1) || q.Mean != ms {
			t.Errorf("%v: %+v outside [%v, %v]", d, q, lo, hi)
		}
	}
	if q := quantiles(&[histBins]uint32{}, 0, 0); q != (Quantiles{}) {
		t.Errorf("no samples: %+v", q)
	}
}
