package server_test

import (
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/switchyard-gw/switchyard/internal/audit"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// scrape reads GET /metrics into metric families.
func scrape(t *testing.T, g *gateway) map[string]*dto.MetricFamily {
	t.Helper()
	resp, body := icGet(t, g.URL, "/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// series finds the series of family name whose labels are exactly labels ("k=v" pairs); nil
// when there is none.
func series(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			found := false
			for _, kv := range labels {
				if kv == l.GetName()+"="+l.GetValue() {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m
	}
	return nil
}

// TestMetricsAfterTraffic: after a failover, a stream, a cut stream and a 429 refused by both
// deployments, /metrics has each series with the values of the audit records (issue 12).
func TestMetricsAfterTraffic(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	var recs []*audit.Record
	call := func(stream bool) sdkResult {
		r := oaSurface.call(t.Context(), g, stream)
		recs = append(recs, g.generation(t, r.Header.Get("X-Request-Id")))
		return r
	}
	// A failover: the primary answers 500, the backup serves.
	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	if r := call(false); r.Err != nil || r.Text != hello("oa-backup") {
		t.Fatalf("failover: %q %v", r.Text, r.Err)
	}
	// A stream of 4 deltas.
	g.Fakes["oa-primary"].Script(fp.Behavior{Deltas: 4})
	if r := call(true); r.Err != nil {
		t.Fatalf("stream: %v", r.Err)
	}
	// A cut after one delta: committed, then truncated.
	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindCut, After: 1})
	if r := call(true); r.Err == nil {
		t.Fatal("cut: no error")
	}
	// A 429 from both: the caller gets 429, both providers are paused.
	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 429, RetryAfter: 30})
	g.Fakes["oa-backup"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 429, RetryAfter: 30})
	if r := call(false); r.Status != 429 {
		t.Fatalf("429: status %d (%v)", r.Status, r.Err)
	}
	fams := scrape(t, g)

	counter := func(name string, want float64, labels ...string) {
		t.Helper()
		m := series(fams, name, labels...)
		if m == nil {
			t.Errorf("no series %s%v", name, labels)
			return
		}
		got := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s%v = %v, want %v", name, labels, got, want)
		}
	}
	histCount := func(name string, want uint64, labels ...string) {
		t.Helper()
		m := series(fams, name, labels...)
		if m == nil {
			if want != 0 {
				t.Errorf("no series %s%v", name, labels)
			}
			return
		}
		if got := m.GetHistogram().GetSampleCount(); got != want {
			t.Errorf("%s%v count = %d, want %d", name, labels, got, want)
		}
	}
	sf, md := "surface=openai.chat", "model=gpt-4o-mini"
	counter("switchyard_requests_total", 2, sf, md, "status=200", "error_code=")
	counter("switchyard_requests_total", 1, sf, md, "status=200", "error_code=upstream_truncated")
	counter("switchyard_requests_total", 1, sf, md, "status=429", "error_code=upstream_rate_limited")
	att := func(dep, prov, outcome, code string, want float64) {
		t.Helper()
		counter("switchyard_attempts_total", want, sf, md, "deployment="+dep, "provider="+prov, "platform=openai", "outcome="+outcome, "error_code="+code)
	}
	att("oa-primary", "openai", "failed", "upstream_error", 1)
	att("oa-backup", "reseller", "completed", "", 1)
	att("oa-primary", "openai", "completed", "", 1)
	att("oa-primary", "openai", "truncated", "upstream_truncated", 1)
	att("oa-primary", "openai", "failed", "upstream_rate_limited", 1)
	att("oa-backup", "reseller", "failed", "upstream_rate_limited", 1)

	histCount("switchyard_request_duration_seconds", 2, sf, md, "stream=false")
	histCount("switchyard_request_duration_seconds", 2, sf, md, "stream=true")
	primary := []string{md, "deployment=oa-primary", "provider=openai"}
	backup := []string{md, "deployment=oa-backup", "provider=reseller"}
	histCount("switchyard_upstream_headers_seconds", 4, primary...)
	histCount("switchyard_upstream_headers_seconds", 2, backup...)
	histCount("switchyard_time_to_first_token_seconds", 2, primary...) // the two streams
	histCount("switchyard_time_to_first_token_seconds", 0, backup...)  // non-stream: no TTFT
	histCount("switchyard_inter_token_gap_seconds", 1, primary...)     // the cut had one delta: no gap
	histCount("switchyard_inter_token_gap_max_seconds", 1, primary...)

	// Tokens and cost: the sums of the audit records' attempts, per route.
	type route struct{ dep, prov string }
	tokens := map[route]*audit.Tokens{}
	cost := map[route]float64{}
	for _, rec := range recs {
		for _, a := range rec.Attempts {
			k := route{a.Deployment, a.Provider}
			if tokens[k] == nil {
				tokens[k] = &audit.Tokens{}
			}
			t := tokens[k]
			t.Input += a.Tokens.Input
			t.Cached += a.Tokens.Cached
			t.CacheWrite += a.Tokens.CacheWrite
			t.Output += a.Tokens.Output
			t.Reasoning += a.Tokens.Reasoning
			cost[k] += a.CostUSD
		}
	}
	for k, tk := range tokens {
		labels := []string{md, "deployment=" + k.dep, "provider=" + k.prov}
		for kind, n := range map[string]int64{"input": tk.Input, "cached": tk.Cached, "cache_write": tk.CacheWrite, "output": tk.Output, "reasoning": tk.Reasoning} {
			counter("switchyard_tokens_total", float64(n), append(labels, "kind="+kind)...)
		}
		counter("switchyard_cost_usd_total", cost[k], labels...)
	}
	if tokens[route{"oa-primary", "openai"}].Output == 0 || cost[route{"oa-backup", "reseller"}] == 0 {
		t.Errorf("the scripted traffic billed nothing: %+v %v", tokens, cost)
	}

	counter("switchyard_deployment_paused", 1, "deployment=oa-primary", "provider=openai")
	counter("switchyard_deployment_paused", 1, "deployment=oa-backup", "provider=reseller")
	counter("switchyard_deployment_paused", 0, "deployment=an-primary", "provider=anthropic")
	if series(fams, "switchyard_circuit_state", "deployment=oa-primary", "model=", "scope=deployment") == nil {
		t.Error("no circuit state of oa-primary")
	}
	counter("switchyard_audit_writer_dropped_total", 0)
	for _, name := range []string{"switchyard_audit_writer_queue_depth", "switchyard_audit_writer_lag_seconds", "go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	// Bounded labels: no request id, no key, no caller string anywhere.
	_, body := icGet(t, g.URL, "/metrics")
	for _, rec := range recs {
		if strings.Contains(string(body), rec.RequestID) {
			t.Errorf("/metrics names request %s", rec.RequestID)
		}
	}
}

// TestMetricsSeriesAtZero: issue 25 item 5: before any refusal, reconciliation or reload the
// admission-refusal series of every caller limit kind, the ledger-reconciled series of every
// mark and the configuration-reload series of both results are exposed at 0, so that dashboards read 0 instead of "No data".
func TestMetricsSeriesAtZero(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	_, b := icGet(t, g.URL, "/metrics")
	for _, line := range []string{
		`switchyard_admission_refusals_total{kind="rpm"} 0`,
		`switchyard_admission_refusals_total{kind="tpm"} 0`,
		`switchyard_admission_refusals_total{kind="concurrency"} 0`,
		`switchyard_admission_refusals_total{kind="budget"} 0`,
		`switchyard_admission_refusals_total{kind="credit"} 0`,
		`switchyard_ledger_reconciled_total{mark="audit-settled"} 0`,
		`switchyard_ledger_reconciled_total{mark="audit-released"} 0`,
		`switchyard_ledger_reconciled_total{mark="unsettled-crash"} 0`,
		`switchyard_config_reloads_total{result="applied"} 0`,
		`switchyard_config_reloads_total{result="refused"} 0`,
	} {
		if !strings.Contains(string(b), line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}
