package stats

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
)

// Window geometry and defaults.
const (
	Buckets       = 24        // hourly buckets per route: the window is the current hour and the 23 before
	BucketWidth   = time.Hour // the span of one bucket
	UptimeMinimum = 100       // counted requests before an uptime is shown (R-CIRCUIT-8)

	DefaultQueueSize = 4096 // observations waiting for Run
	DefaultMaxRoutes = 4096 // routes plus deployments tracked (each about 1.8 KB)
	batchSize        = 256  // observations applied before a snapshot is published
)

// Observation is the outcome of one upstream attempt, as the relay reports it.
type Observation struct {
	Deployment string
	Model      string // the catalog model id of the route
	// At is when the attempt ended; zero means when Run applies it.
	At time.Time
	// Outcome is the failure class, "" for a success.
	Outcome failure.Class
	// TTFT is the time to the first token; 0 when unknown (no latency sample).
	TTFT time.Duration
	// Duration is the whole attempt, from send to end.
	Duration time.Duration
	// OutputTokens is the completion's output tokens (a throughput sample when positive).
	OutputTokens int
}

// Options configure a Collector. The zero value gives the defaults.
type Options struct {
	// QueueSize bounds the observations waiting for Run; one offered to a full queue is
	// dropped. Zero or negative means DefaultQueueSize (4096).
	QueueSize int
	// MaxRoutes bounds the entries held: one per (deployment, model) and one per deployment.
	// Observations for a new entry beyond it are dropped. Zero or negative means
	// DefaultMaxRoutes (4096).
	MaxRoutes int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// A Collector keeps the windows. Record, Route, Uptime and Dropped are safe for concurrent
// use; Run must be running for observations to be applied.
type Collector struct {
	now       func() time.Time
	maxRoutes int
	queue     chan Observation
	dropped   atomic.Uint64
	running   atomic.Bool
	routes    atomic.Pointer[map[key]*entry] // copy on write; written by Run only

	touched []*entry // owned by Run: entries changed since the last publish
}

type key struct{ deployment, model string }

// New returns a Collector; start its Run.
func New(o Options) *Collector {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.MaxRoutes <= 0 {
		o.MaxRoutes = DefaultMaxRoutes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Collector{now: o.Now, maxRoutes: o.MaxRoutes, queue: make(chan Observation, o.QueueSize)}
	m := map[key]*entry{}
	c.routes.Store(&m)
	return c
}

// Record queues o for Run and returns at once; it never blocks. When the queue is full o is
// dropped and counted in Dropped.
func (c *Collector) Record(o Observation) {
	select {
	case c.queue <- o:
	default:
		c.dropped.Add(1)
	}
}

// Dropped returns how many observations were lost: offered to a full queue, or for a new route
// beyond MaxRoutes.
func (c *Collector) Dropped() uint64 { return c.dropped.Load() }

// Run applies queued observations until ctx is done, then applies what is still queued and
// returns nil. It returns an error at once if Run is already running.
func (c *Collector) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("stats: Collector.Run is already running")
	}
	defer c.running.Store(false)
	for {
		select {
		case <-ctx.Done():
			c.drain(cap(c.queue)) // what was queued by now; later Records wait for the next Run
			c.publish()
			return nil
		case o := <-c.queue:
			c.apply(o)
			c.drain(batchSize)
			c.publish()
		}
	}
}

// drain applies up to n queued observations without waiting and returns how many it applied.
func (c *Collector) drain(n int) int {
	for i := range n {
		select {
		case o := <-c.queue:
			c.apply(o)
		default:
			return i
		}
	}
	return n
}

// Route returns the route's measurements over the window; ok is false when the window holds
// none. It satisfies plan.Stats; model "" gives the deployment across its models.
func (c *Collector) Route(deployment, model string) (rs plan.RouteStats, ok bool) {
	e := (*c.routes.Load())[key{deployment, model}]
	if e == nil {
		return plan.RouteStats{}, false
	}
	s := e.current(hourOf(c.now()))
	return s.route, s.route.Samples > 0
}

// Uptime returns the share of counted requests that succeeded over the window, upstream 429s
// excluded, for the (deployment, model) route, or the whole deployment when model is "". ok is
// false, and ratio 0, below UptimeMinimum counted requests (R-CIRCUIT-8).
func (c *Collector) Uptime(deployment, model string) (ratio float64, ok bool) {
	e := (*c.routes.Load())[key{deployment, model}]
	if e == nil {
		return 0, false
	}
	return e.current(hourOf(c.now())).uptime()
}

// apply adds o to its route's and its deployment's windows. Run's goroutine only.
func (c *Collector) apply(o Observation) {
	var ok, fail, upFail bool
	switch {
	case o.Outcome == "":
		ok = true
	case o.Outcome.CountsOnCircuit():
		fail, upFail = true, o.Outcome != failure.UpstreamRateLimited
	default:
		return // caller fault, cancellation, or a refusal of the gateway: not counted
	}
	now := hourOf(c.now())
	h := now
	if !o.At.IsZero() {
		h = min(hourOf(o.At), now) // a clock ahead of ours counts now
	}
	if h <= now-Buckets {
		return // older than the window
	}
	for _, k := range [2]key{{o.Deployment, o.Model}, {o.Deployment, ""}} {
		e := c.entry(k)
		if e == nil {
			c.dropped.Add(1)
			return
		}
		e.mu.Lock()
		b := &e.b[uint64(h)%Buckets] // uint64: no negative index before 1970
		if b.hour != h {
			*b = bucket{hour: h}
		}
		switch {
		case ok:
			b.ok++
			if o.TTFT > 0 {
				b.ttftN++
				b.ttftMillis += float64(o.TTFT) / float64(time.Millisecond)
				b.ttftHist[histBin(o.TTFT)]++
			}
			if o.Duration > 0 {
				b.latN++
				b.latMillis += float64(o.Duration) / float64(time.Millisecond)
				b.latHist[histBin(o.Duration)]++
			}
			gen := o.Duration
			if o.TTFT > 0 && o.Duration > o.TTFT {
				gen = o.Duration - o.TTFT
			}
			if o.OutputTokens > 0 && gen > 0 {
				b.tpsN++
				b.tokens += int64(o.OutputTokens)
				b.genSeconds += gen.Seconds()
			}
		case fail:
			b.fail++
			if upFail {
				b.upFail++
			}
		}
		e.mu.Unlock()
		if !e.touched {
			e.touched = true
			c.touched = append(c.touched, e)
		}
	}
}

// entry returns the entry for k, adding it (copy on write) when there is room, else nil. Run's
// goroutine only.
func (c *Collector) entry(k key) *entry {
	m := *c.routes.Load()
	if e := m[k]; e != nil {
		return e
	}
	if len(m) >= c.maxRoutes {
		return nil
	}
	n := make(map[key]*entry, len(m)+1)
	for kk, e := range m {
		n[kk] = e
	}
	e := &entry{}
	n[k] = e
	c.routes.Store(&n)
	return e
}

// publish refreshes the snapshots of the entries changed since the last publish.
func (c *Collector) publish() {
	now := hourOf(c.now())
	for i, e := range c.touched {
		e.touched = false
		e.mu.Lock()
		e.snap.Store(e.compute(now))
		e.mu.Unlock()
		c.touched[i] = nil
	}
	c.touched = c.touched[:0]
}

// hourOf is the bucket number of t: whole hours since the Unix epoch.
func hourOf(t time.Time) int64 { return t.Unix() / int64(BucketWidth/time.Second) }

// bucket holds one hour's sums and counts.
type bucket struct {
	hour       int64 // hourOf the hour it holds
	ok, fail   int64 // successes and counted failures
	upFail     int64 // the failures that count against uptime (no upstream 429)
	ttftN      int64
	ttftMillis float64 // sum
	tpsN       int64
	tokens     int64   // output tokens, sum
	genSeconds float64 // generation time after the first token, sum
	latN       int64   // successful attempts with a duration
	latMillis  float64 // their durations, sum
	// the distributions of the TTFT and duration samples (histBin)
	ttftHist, latHist [histBins]uint32
}

// entry is one route's (or deployment's) ring of buckets and its last snapshot.
type entry struct {
	mu      sync.Mutex // guards b, and orders snapshot stores
	b       [Buckets]bucket
	snap    atomic.Pointer[snapshot]
	touched bool // Run's goroutine only
}

// snapshot is an entry's window as of one hour.
type snapshot struct {
	hour            int64
	route           plan.RouteStats
	upOK, upCounted int64
	ttft, latency   Quantiles
}

// uptime is the snapshot's uptime and whether it is shown (R-CIRCUIT-8: from UptimeMinimum
// counted requests).
func (s *snapshot) uptime() (float64, bool) {
	if s.upCounted < UptimeMinimum {
		return 0, false
	}
	return float64(s.upOK) / float64(s.upCounted), true
}

// current returns the snapshot for hour now, recomputing it if the published one is of
// another hour.
func (e *entry) current(now int64) *snapshot {
	if s := e.snap.Load(); s != nil && s.hour == now {
		return s
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.snap.Load(); s != nil && s.hour == now {
		return s
	}
	s := e.compute(now)
	e.snap.Store(s)
	return s
}

// compute sums the buckets inside the window ending at hour now. e.mu must be held.
func (e *entry) compute(now int64) *snapshot {
	var t bucket
	for i := range e.b {
		b := &e.b[i]
		if b.hour > now-Buckets && b.hour <= now {
			t.ok += b.ok
			t.fail += b.fail
			t.upFail += b.upFail
			t.ttftN += b.ttftN
			t.ttftMillis += b.ttftMillis
			t.tpsN += b.tpsN
			t.tokens += b.tokens
			t.genSeconds += b.genSeconds
			t.latN += b.latN
			t.latMillis += b.latMillis
			for j := range histBins {
				t.ttftHist[j] += b.ttftHist[j]
				t.latHist[j] += b.latHist[j]
			}
		}
	}
	s := &snapshot{hour: now, upOK: t.ok, upCounted: t.ok + t.upFail}
	s.route.Samples = int(t.ok + t.fail)
	if s.route.Samples > 0 {
		s.route.SuccessRatio = float64(t.ok) / float64(s.route.Samples)
	}
	if s.route.TTFTSamples = int(t.ttftN); t.ttftN > 0 {
		s.route.TTFTMillis = t.ttftMillis / float64(t.ttftN)
	}
	if s.route.ThroughputSamples = int(t.tpsN); t.tpsN > 0 && t.genSeconds > 0 {
		s.route.TokensPerSec = float64(t.tokens) / t.genSeconds
	}
	s.ttft = quantiles(&t.ttftHist, t.ttftN, t.ttftMillis)
	s.latency = quantiles(&t.latHist, t.latN, t.latMillis)
	return s
}
