package server

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The request path counts through cached counters: the same totals as the vectors, and no
// allocation once a label set was seen.
func TestMetricsCachedCounters(t *testing.T) {
	m := newMetrics()
	for range 3 {
		m.request(SurfaceChat, 200, "")
		m.attempt("oa-primary", "completed", "")
	}
	m.request(SurfaceChat, 502, "upstream_error")
	if got := value(t, m.requests.WithLabelValues(SurfaceChat, "200", "")); got != 3 {
		t.Errorf("requests 200 = %v, want 3", got)
	}
	if got := value(t, m.requests.WithLabelValues(SurfaceChat, "502", "upstream_error")); got != 1 {
		t.Errorf("requests 502 = %v, want 1", got)
	}
	if got := value(t, m.attempts.WithLabelValues("oa-primary", "completed", "")); got != 3 {
		t.Errorf("attempts = %v, want 3", got)
	}
	if n := testing.AllocsPerRun(100, func() {
		m.request(SurfaceChat, 200, "")
		m.attempt("oa-primary", "completed", "")
	}); n != 0 {
		t.Errorf("%v allocations per counted request, want 0", n)
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
