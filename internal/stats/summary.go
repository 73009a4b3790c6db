package stats

import (
	"math"
	"time"

	"github.com/switchyard-gw/switchyard/internal/plan"
)

// Summary is one route's window (or a deployment's across its models, model ""), as the admin
// API's statistics show it (docs/admin-api.md "Route statistics"): what routing reads, the
// uptime of GET /v1/models/{id}, and the distributions of time to first token and duration.
type Summary struct {
	// Route is what plans read (Collector.Route): mean TTFT, throughput, success ratio and
	// their sample counts.
	Route plan.RouteStats
	// Counted are the requests counted for uptime: successes and failures that count on a
	// circuit, upstream 429s excluded (R-CIRCUIT-8).
	Counted int64
	// Uptime is the success share of Counted, valid when HasUptime (from UptimeMinimum
	// counted requests): the figure Collector.Uptime returns.
	Uptime    float64
	HasUptime bool
	// TTFT and Latency are the time to first token and the whole duration of successful
	// attempts, in milliseconds.
	TTFT, Latency Quantiles
}

// Quantiles describe N samples in milliseconds: their exact mean, and their median and 99th
// percentile read from a histogram of bins a factor of √2 wide: the estimate and the true
// quantile lie in the same bin, so they differ by less than a factor of √2 (by less than 1 ms
// below 1 ms). All are 0 when N is 0.
type Quantiles struct {
	N              int64
	Mean, P50, P99 float64
}

// Summary returns the window of a (deployment, model) route, or the deployment's across its
// models when model is ""; ok is false when nothing was observed in the window.
func (c *Collector) Summary(deployment, model string) (sum Summary, ok bool) {
	e := (*c.routes.Load())[key{deployment, model}]
	if e == nil {
		return Summary{}, false
	}
	s := e.current(hourOf(c.now()))
	sum = Summary{Route: s.route, Counted: s.upCounted, TTFT: s.ttft, Latency: s.latency}
	sum.Uptime, sum.HasUptime = s.uptime()
	return sum, s.route.Samples > 0
}

// histBins is the number of bins of a latency histogram: bin 0 holds samples below 1 ms, bin
// i >= 1 those in [2^((i-1)/2), 2^(i/2)) ms, and the last bin everything from 2^19 ms (about
// 9 minutes) up.
const histBins = 40

// histBin is the bin of duration d.
func histBin(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 1 {
		return 0
	}
	return min(1+int(math.Floor(2*math.Log2(ms))), histBins-1)
}

// binBounds are the bounds of bin i in milliseconds.
func binBounds(i int) (lo, hi float64) {
	if i == 0 {
		return 0, 1
	}
	return math.Exp2(float64(i-1) / 2), math.Exp2(float64(i) / 2)
}

// quantiles reads the median and 99th percentile of the n samples of h (summing to sum ms):
// the bin holding the sample of that rank, interpolated inside it at the rank's midpoint
// (geometrically; linearly in bin 0), the last bin at its lower bound.
func quantiles(h *[histBins]uint32, n int64, sum float64) Quantiles {
	if n <= 0 {
		return Quantiles{}
	}
	q := Quantiles{N: n, Mean: sum / float64(n)}
	var total int64
	for _, c := range h {
		total += int64(c)
	}
	if total == 0 {
		return q
	}
	at := func(p float64) float64 {
		rank := math.Ceil(p * float64(total)) // 1-based rank of the sample
		var cum int64
		for i, c := range h {
			if c == 0 || float64(cum+int64(c)) < rank {
				cum += int64(c)
				continue
			}
			lo, hi := binBounds(i)
			frac := (rank - float64(cum) - 0.5) / float64(c)
			switch {
			case i == histBins-1:
				return lo
			case i == 0:
				return lo + frac*(hi-lo)
			default:
				return lo * math.Pow(hi/lo, frac)
			}
		}
		lo, _ := binBounds(histBins - 1)
		return lo
	}
	q.P50, q.P99 = at(0.50), at(0.99)
	return q
}
