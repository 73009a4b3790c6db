package server

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/relay"
	"github.com/switchyard-gw/switchyard/internal/telemetry"
)

// latencyBuckets are the classic buckets of every latency histogram, in seconds: 10 ms to 120 s,
// the span of LLM latencies from a cached embedding to a long reasoning stream. Each histogram
// is also a native (sparse) histogram for scrapers that negotiate the protobuf format.
var latencyBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120}

// tokenKinds are the values of switchyard_tokens_total's kind label, in audit.Tokens order.
var tokenKinds = [...]string{"input", "cached", "cache_write", "output", "reasoning"}

// metrics are the Prometheus series of the request path (docs/observability.md). Every label
// value comes from the catalog, the configuration or a fixed set: never a key id, a request
// id or a caller's string; the callers' own connections (BYOK) are one deployment "byok".
//
// The request path counts through cached children: a request looks its series up once per
// label set in a map keyed by the label values (no status formatting, no vector hashing, no key
// boxed on the heap) and then only adds to atomics, so counting allocates nothing once a label
// set was seen (TestMetricsObserveNoAllocs, BenchmarkMetricsObserve).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
	headers  *prometheus.HistogramVec
	ttft     *prometheus.HistogramVec
	gap      *prometheus.HistogramVec
	gapMax   *prometheus.HistogramVec
	tokens   *prometheus.CounterVec
	cost     *prometheus.CounterVec
	refusals *prometheus.CounterVec
	// reconciled counts the ledger entries the crash reconciliation wrote, by mark.
	reconciled *prometheus.CounterVec
	// reloads counts the configuration reloads by result: applied, refused (Reload,
	// ReloadRefused).
	reloads *prometheus.CounterVec
	// genai are the GenAI semantic conventions' client histograms (genai.go).
	genai *genaiMetrics

	mu     sync.RWMutex
	reqs   map[requestLabels]*requestSeries
	atts   map[attemptLabels]*attemptSeries
	routes map[routeLabels]*routeSeries
	kinds  map[string]prometheus.Counter
}

// requestLabels are the labels of switchyard_requests_total; model is the catalog model id the
// caller's model string resolved to ("" when it did not resolve).
type requestLabels struct {
	surface, model string
	status         int
	code           string
	stream         bool
}

// requestSeries are a request label set's counter and its duration histogram.
type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// attemptLabels are the labels of switchyard_attempts_total.
type attemptLabels struct {
	surface, model, deployment, provider, platform, outcome, code string
}

// attemptSeries are an attempt label set's counter and its route's series.
type attemptSeries struct {
	count prometheus.Counter
	route *routeSeries
}

// routeLabels are a (model, deployment, provider) route: the labels of the latency histograms
// and of the token and cost counters.
type routeLabels struct{ model, deployment, provider string }

type routeSeries struct {
	headers, ttft, gap, gapMax prometheus.Observer
	tokens                     [len(tokenKinds)]prometheus.Counter
	cost                       prometheus.Counter
}

func histogram(name, help string, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: name, Help: help, Buckets: latencyBuckets,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour,
	}, labels)
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), reqs: map[requestLabels]*requestSeries{},
		atts: map[attemptLabels]*attemptSeries{}, routes: map[routeLabels]*routeSeries{}, kinds: map[string]prometheus.Counter{}}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_requests_total", Help: "Model calls by surface, catalog model, status and final failure class.",
	}, []string{"surface", "model", "status", "error_code"})
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_attempts_total", Help: "Physical upstream attempts by surface, catalog model, deployment (\"byok\" for every caller's own connection), provider, platform (openai, anthropic, bedrock, vertex, azure), outcome and failure class.",
	}, []string{"surface", "model", "deployment", "provider", "platform", "outcome", "error_code"})
	m.duration = histogram("switchyard_request_duration_seconds",
		"Seconds from a model call's arrival to its last byte, by surface, catalog model and stream (true, false).", "surface", "model", "stream")
	route := []string{"model", "deployment", "provider"}
	m.headers = histogram("switchyard_upstream_headers_seconds",
		"Seconds from an attempt's dispatch to the provider's response headers.", route...)
	m.ttft = histogram("switchyard_time_to_first_token_seconds",
		"Seconds from a streamed attempt's dispatch to its first semantic event (the commit).", route...)
	m.gap = histogram("switchyard_inter_token_gap_seconds",
		"Mean seconds between consecutive semantic events of a committed stream; one observation per stream.", route...)
	m.gapMax = histogram("switchyard_inter_token_gap_max_seconds",
		"Longest seconds between consecutive semantic events of a committed stream; one observation per stream.", route...)
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_tokens_total", Help: "Tokens of attempts as billed (provider-reported or estimated), by route and kind (input, cached, cache_write, output, reasoning; reasoning is part of output).",
	}, append(route, "kind"))
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_cost_usd_total", Help: "Billed cost of attempts in USD, by route.",
	}, route)
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_admission_refusals_total", Help: "Requests refused by a caller limit before any attempt, by limit kind (rpm, tpm, concurrency, budget, credit).",
	}, []string{"kind"})
	m.reconciled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_ledger_reconciled_total",
		Help: "Reserves of replicas gone (killed before writing the settle or release) closed by this replica, by mark: audit-settled, audit-released, unsettled-crash.",
	}, []string{"mark"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_config_reloads_total",
		Help: "Configuration reloads (SIGHUP, switchyard reload) by result: applied, refused (the file did not load or validate; the previous configuration keeps serving).",
	}, []string{"result"})
	// The refusal, reconciliation and reload series exist at 0 from the start (issue 25 item 5),
	// so that a dashboard reads 0, not "No data", until the first event.
	for _, k := range [...]string{"rpm", "tpm", "concurrency", "budget", "credit"} {
		m.kinds[k] = m.refusals.WithLabelValues(k)
	}
	for _, mark := range [...]string{accounts.MarkAuditSettled, accounts.MarkAuditReleased, accounts.MarkUnsettledCrash} {
		m.reconciled.WithLabelValues(mark)
	}
	for _, result := range [...]string{reloadApplied, reloadRefused} {
		m.reloads.WithLabelValues(result)
	}
	m.reg.MustRegister(m.requests, m.attempts, m.duration, m.headers, m.ttft, m.gap, m.gapMax, m.tokens, m.cost, m.refusals, m.reconciled, m.reloads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.genai = newGenAIMetrics(m.reg)
	return m
}

// registerCollectors registers the series read at scrape time: the circuits and pauses, and
// the audit and ledger queues. None costs the request path anything.
func (s *Server) registerCollectors() {
	reg := s.metrics.reg
	reg.MustRegister(circuitCollector{s.circuits}, pauseCollector{s})
	rec := s.rec
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_audit_writer_queue_depth",
			Help: "Audit records queued or being written."}, func() float64 { return float64(rec.Queued()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_audit_writer_lag_seconds",
			Help: "Seconds the oldest audit record waiting for a batch has waited (0 when none waits)."},
			func() float64 { return rec.Lag(time.Now()).Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_audit_writer_dropped_total",
			Help: "Audit records that will never be written: offered to a full queue or lost to a failed store write."},
			func() float64 { return float64(rec.Dropped()) }),
	)
	if led := s.ledger; led != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_ledger_writer_queue_depth",
				Help: "Ledger entries waiting to be written (a batch being retried included)."}, func() float64 { return float64(led.Queued()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_ledger_writer_dropped_total",
				Help: "Ledger entries offered to a full queue (never written)."}, func() float64 { return float64(led.Dropped()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_ledger_writer_lag_seconds",
				Help: "Seconds the oldest ledger entry not yet written has waited (0 when none is queued); a warning is logged past 1 s."},
				func() float64 { return led.Lag().Seconds() }),
		)
	}
}

// seriesCache is the series a pooled call state counted its last request and attempt into,
// with their label values: the next request of the same label sets (most requests of a busy
// gateway) takes them without the shared lock and map lookups of metrics.request and
// metrics.attempt. m is the metrics they belong to (a cache of another metrics is not used).
type seriesCache struct {
	m   *metrics
	req requestLabels
	rs  *requestSeries
	att attemptLabels
	as  *attemptSeries
	// gk and genai are the last attempt's GenAI label set and series (genai.go).
	gk    telemetry.GenAIAttempt
	genai *genaiSeries
}

// observe counts one finished model call: the request, each attempt, and each attempt's
// latencies, tokens and cost. model is the catalog model the request resolved to; gaps are the
// committed stream's (nil: none); c is the calling state's cache of series (nil: none). It
// allocates nothing once the label sets were seen.
func (m *metrics) observe(rec *audit.Record, model string, gaps *relay.Gaps, c *seriesCache) {
	if c == nil {
		c = &seriesCache{}
	}
	if c.m != m {
		*c = seriesCache{m: m}
	}
	rk := requestLabels{rec.Surface, model, rec.Status, rec.ErrorCode, rec.Stream}
	rs := c.rs
	if rs == nil || c.req != rk {
		rs = m.request(rk)
		c.req, c.rs = rk, rs
	}
	rs.count.Inc()
	rs.duration.Observe(rec.DurationMS / 1000)
	for i := range rec.Attempts {
		a := &rec.Attempts[i]
		dep := a.Deployment
		if strings.HasPrefix(dep, accounts.ConnectionPrefix) {
			dep = "byok" // one series for every caller's own connection: the label set stays bounded
		}
		ak := attemptLabels{rec.Surface, a.Model, dep, a.Provider, a.Platform, a.Outcome, a.ErrorCode}
		as := c.as
		if as == nil || c.att != ak {
			as = m.attempt(ak)
			c.att, c.as = ak, as
		}
		as.count.Inc()
		r := as.route
		if a.HeadersMS != nil {
			r.headers.Observe(*a.HeadersMS / 1000)
		}
		if a.FirstTokenMS != nil && rec.Stream {
			r.ttft.Observe(*a.FirstTokenMS / 1000)
		}
		if gaps != nil && gaps.N > 0 && i == len(rec.Attempts)-1 {
			r.gap.Observe(gaps.Mean().Seconds())
			r.gapMax.Observe(gaps.Max.Seconds())
		}
		t := &a.Tokens
		for k, n := range [...]int64{t.Input, t.Cached, t.CacheWrite, t.Output, t.Reasoning} {
			if n > 0 {
				r.tokens[k].Add(float64(n))
			}
		}
		if a.CostUSD > 0 {
			r.cost.Add(a.CostUSD)
		}
	}
}

// refused counts a request refused by a caller limit (switchyard_admission_refusals_total).
func (m *metrics) refused(kind string) {
	m.mu.RLock()
	c := m.kinds[kind]
	m.mu.RUnlock()
	if c == nil {
		c = m.refusals.WithLabelValues(kind)
		m.mu.Lock()
		m.kinds[kind] = c
		m.mu.Unlock()
	}
	c.Inc()
}

func (m *metrics) request(k requestLabels) *requestSeries {
	m.mu.RLock()
	s := m.reqs[k]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	s = &requestSeries{
		count:    m.requests.WithLabelValues(k.surface, k.model, strconv.Itoa(k.status), k.code),
		duration: m.duration.WithLabelValues(k.surface, k.model, strconv.FormatBool(k.stream)),
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.reqs[k]; old != nil {
		return old
	}
	m.reqs[k] = s
	return s
}

func (m *metrics) attempt(k attemptLabels) *attemptSeries {
	m.mu.RLock()
	s := m.atts[k]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	rk := routeLabels{k.model, k.deployment, k.provider}
	m.mu.RLock()
	r := m.routes[rk]
	m.mu.RUnlock()
	if r == nil {
		r = &routeSeries{
			headers: m.headers.WithLabelValues(rk.model, rk.deployment, rk.provider),
			ttft:    m.ttft.WithLabelValues(rk.model, rk.deployment, rk.provider),
			gap:     m.gap.WithLabelValues(rk.model, rk.deployment, rk.provider),
			gapMax:  m.gapMax.WithLabelValues(rk.model, rk.deployment, rk.provider),
			cost:    m.cost.WithLabelValues(rk.model, rk.deployment, rk.provider),
		}
		for i, kind := range tokenKinds {
			r.tokens[i] = m.tokens.WithLabelValues(rk.model, rk.deployment, rk.provider, kind)
		}
	}
	s = &attemptSeries{count: m.attempts.WithLabelValues(k.surface, k.model, k.deployment, k.provider, k.platform, k.outcome, k.code)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.routes[rk]; old != nil {
		r = old
	} else {
		m.routes[rk] = r
	}
	s.route = r
	if old := m.atts[k]; old != nil {
		return old
	}
	m.atts[k] = s
	return s
}
