package server

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/relay"
	"github.com/switchyard-gw/switchyard/internal/telemetry"
)

func ms(v float64) *float64 { return &v }

// metricsRecord is a failover then a committed stream: two attempts on two routes.
func metricsRecord() *audit.Record {
	return &audit.Record{RequestID: "req_1", Surface: SurfaceChat, Model: "caller-string", Status: 200, Stream: true, DurationMS: 1500,
		Attempts: []audit.Attempt{
			{Attempt: 1, Deployment: "oa-primary", Provider: "openai", Platform: "azure", Model: "gpt-4o", Outcome: audit.OutcomeFailed,
				ErrorCode: "upstream_rate_limited", HeadersMS: ms(40)},
			{Attempt: 2, Deployment: "byok:conn_123", Provider: "openai", Platform: "openai", Model: "gpt-4o", Outcome: audit.OutcomeCompleted,
				HeadersMS: ms(120), FirstTokenMS: ms(300), CostUSD: 0.0025,
				Tokens: audit.Tokens{Input: 100, Cached: 20, CacheWrite: 5, Output: 50, Reasoning: 10}},
		}}
}

// observe counts a request, its attempts, latencies, tokens and cost through the cached
// children: the values the vectors hold, BYOK folded into "byok", the caller's string never a
// label.
func TestMetricsObserve(t *testing.T) {
	m := newMetrics()
	gaps := relay.Gaps{N: 4, Sum: 200 * time.Millisecond, Max: 80 * time.Millisecond}
	for range 3 {
		m.observe(metricsRecord(), "gpt-4o", &gaps, nil)
	}
	m.refused("rpm")
	if got := value(t, m.requests.WithLabelValues(SurfaceChat, "gpt-4o", "200", "")); got != 3 {
		t.Errorf("requests = %v, want 3", got)
	}
	if got := value(t, m.attempts.WithLabelValues(SurfaceChat, "gpt-4o", "oa-primary", "openai", "azure", "failed", "upstream_rate_limited")); got != 3 {
		t.Errorf("failed attempts = %v, want 3", got)
	}
	if got := value(t, m.attempts.WithLabelValues(SurfaceChat, "gpt-4o", "byok", "openai", "openai", "completed", "")); got != 3 {
		t.Errorf("byok attempts = %v, want 3", got)
	}
	for kind, want := range map[string]float64{"input": 300, "cached": 60, "cache_write": 15, "output": 150, "reasoning": 30} {
		if got := value(t, m.tokens.WithLabelValues("gpt-4o", "byok", "openai", kind)); got != want {
			t.Errorf("tokens %s = %v, want %v", kind, got, want)
		}
	}
	if got := value(t, m.cost.WithLabelValues("gpt-4o", "byok", "openai")); got < 0.00749 || got > 0.00751 {
		t.Errorf("cost = %v, want 0.0075", got)
	}
	if got := value(t, m.refusals.WithLabelValues("rpm")); got != 1 {
		t.Errorf("refusals = %v, want 1", got)
	}
	for _, c := range []struct {
		h         *prometheus.HistogramVec
		labels    []string
		n         uint64
		sum       float64
		name      string
		notLabels []string
	}{
		{m.duration, []string{SurfaceChat, "gpt-4o", "true"}, 3, 4.5, "duration", nil},
		{m.headers, []string{"gpt-4o", "oa-primary", "openai"}, 3, 0.12, "headers primary", nil},
		{m.headers, []string{"gpt-4o", "byok", "openai"}, 3, 0.36, "headers byok", nil},
		{m.ttft, []string{"gpt-4o", "byok", "openai"}, 3, 0.9, "ttft", nil},
		{m.ttft, []string{"gpt-4o", "oa-primary", "openai"}, 0, 0, "ttft of the failed attempt", nil},
		{m.gap, []string{"gpt-4o", "byok", "openai"}, 3, 0.15, "gap mean", nil},
		{m.gapMax, []string{"gpt-4o", "byok", "openai"}, 3, 0.24, "gap max", nil},
		{m.gap, []string{"gpt-4o", "oa-primary", "openai"}, 0, 0, "gap of the failed attempt", nil},
	} {
		n, sum := hist(t, c.h.WithLabelValues(c.labels...))
		if n != c.n || sum < c.sum-1e-9 || sum > c.sum+1e-9 {
			t.Errorf("%s: count %d sum %v, want %d and %v", c.name, n, sum, c.n, c.sum)
		}
	}
}

// Counting a finished request allocates nothing once its label sets were seen.
func TestMetricsObserveNoAllocs(t *testing.T) {
	m := newMetrics()
	rec := metricsRecord()
	gaps := relay.Gaps{N: 4, Sum: 200 * time.Millisecond, Max: 80 * time.Millisecond}
	var c seriesCache
	m.observe(rec, "gpt-4o", &gaps, &c)
	if n := testing.AllocsPerRun(200, func() { m.observe(rec, "gpt-4o", &gaps, &c) }); n != 0 {
		t.Errorf("%v allocations per observed request, want 0", n)
	}
}

// BenchmarkMetricsObserve is the cost of counting one request of two attempts.
func BenchmarkMetricsObserve(b *testing.B) {
	m := newMetrics()
	rec := metricsRecord()
	gaps := relay.Gaps{N: 4, Sum: 200 * time.Millisecond, Max: 80 * time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var c seriesCache
		for pb.Next() {
			m.observe(rec, "gpt-4o", &gaps, &c)
		}
	})
}

// TestMetricsSeriesCache: a call state's cached series are used only for the label sets they
// were looked up for: requests of other statuses, models, outcomes and another metrics set,
// counted through one cache in turns, each reach their own series.
func TestMetricsSeriesCache(t *testing.T) {
	m, other := newMetrics(), newMetrics()
	ok := func() *audit.Record {
		return &audit.Record{Surface: SurfaceChat, Status: 200, Attempts: []audit.Attempt{
			{Deployment: "oa-primary", Provider: "openai", Model: "gpt-4o", Outcome: audit.OutcomeCompleted, HeadersMS: ms(10)}}}
	}
	failed := func() *audit.Record {
		r := ok()
		r.Status, r.ErrorCode = 502, "upstream_error"
		r.Attempts[0].Outcome, r.Attempts[0].ErrorCode = audit.OutcomeFailed, "upstream_error"
		return r
	}
	var c seriesCache
	for range 3 {
		m.observe(ok(), "gpt-4o", nil, &c)
		m.observe(failed(), "gpt-4o", nil, &c)
		m.observe(ok(), "gpt-4o-mini", nil, &c)
		other.observe(ok(), "gpt-4o", nil, &c)
	}
	for _, tc := range []struct {
		m      *metrics
		labels []string
	}{
		{m, []string{SurfaceChat, "gpt-4o", "200", ""}},
		{m, []string{SurfaceChat, "gpt-4o", "502", "upstream_error"}},
		{m, []string{SurfaceChat, "gpt-4o-mini", "200", ""}},
		{other, []string{SurfaceChat, "gpt-4o", "200", ""}},
	} {
		if got := value(t, tc.m.requests.WithLabelValues(tc.labels...)); got != 3 {
			t.Errorf("requests %v = %v, want 3", tc.labels, got)
		}
	}
	if got := value(t, m.attempts.WithLabelValues(SurfaceChat, "gpt-4o", "oa-primary", "openai", "", "completed", "")); got != 6 {
		t.Errorf("completed attempts = %v, want 6 (3 gpt-4o requests and 3 of the other model's route, one attempt label set)", got)
	}
	if got := value(t, m.attempts.WithLabelValues(SurfaceChat, "gpt-4o", "oa-primary", "openai", "", "failed", "upstream_error")); got != 3 {
		t.Errorf("failed attempts = %v, want 3", got)
	}
	if got := value(t, other.attempts.WithLabelValues(SurfaceChat, "gpt-4o", "oa-primary", "openai", "", "completed", "")); got != 3 {
		t.Errorf("other metrics' attempts = %v, want 3", got)
	}
}

// value reads a counter's current value.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// hist reads a histogram's count and sum.
func hist(t *testing.T, o prometheus.Observer) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// observeGenAI records the GenAI client histograms of each attempt under the semconv's
// Prometheus names, without allocating once the label sets were seen (OTLP off): tokens only
// for an attempt with known usage, the first chunk only for a streamed attempt that had one,
// error_type on the failed attempt's duration; a caller's own connection has no server address.
func TestObserveGenAI(t *testing.T) {
	s := &Server{metrics: newMetrics(), peers: map[string]genaiPeer{
		"oa-primary": {peer: telemetry.PeerOf("https://api.openai.com/v1"), provider: "openai"}}}
	rec := metricsRecord()
	t0 := time.Unix(1700000000, 0)
	rec.Attempts[0].DispatchedAt, rec.Attempts[0].EndedAt = t0, t0.Add(250*time.Millisecond)
	rec.Attempts[1].DispatchedAt, rec.Attempts[1].UsageProvenance = t0.Add(time.Second), audit.ProvenanceObserved
	end := t0.Add(3 * time.Second)
	var c seriesCache
	s.observeGenAI(rec, end, &c, nil)
	// AllocsPerRun runs it once more to warm up: 102 calls in all.
	if n := testing.AllocsPerRun(100, func() { s.observeGenAI(rec, end, &c, nil) }); n != 0 {
		t.Errorf("%v allocations per observed request, want 0", n)
	}
	g := s.metrics.genai
	failed := g.get(telemetry.GenAIAttempt{Operation: "chat", Provider: "openai", Model: "gpt-4o",
		Peer: telemetry.Peer{Address: "api.openai.com", Port: 443}, ErrorType: "upstream_rate_limited"})
	if n, sum := hist(t, failed.duration); n != 102 || sum != 102*0.25 {
		t.Errorf("failed attempt's duration: %d observations, sum %v; want 102 of 0.25 s", n, sum)
	}
	if n, _ := hist(t, failed.input); n != 0 {
		t.Errorf("the failed attempt (no usage) recorded %d token observations", n)
	}
	byok := g.get(telemetry.GenAIAttempt{Operation: "chat", Provider: "openai", Model: "gpt-4o"})
	if n, sum := hist(t, byok.input); n != 102 || sum != 102*125 {
		t.Errorf("input tokens: %d observations, sum %v; want 102 of 125 (input + cached + cache write)", n, sum)
	}
	if n, sum := hist(t, byok.output); n != 102 || sum != 102*50 {
		t.Errorf("output tokens: %d, %v", n, sum)
	}
	if n, sum := hist(t, byok.duration); n != 102 || sum != 102*2 {
		t.Errorf("served attempt's duration (to the call's end): %d, %v", n, sum)
	}
	if n, sum := hist(t, byok.firstChunk); n != 102 || math.Abs(sum-102*0.3) > 1e-9 {
		t.Errorf("first chunk: %d, %v", n, sum)
	}
}
