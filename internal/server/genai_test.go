package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-gw/switchyard/internal/config"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/server"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
	"github.com/switchyard-gw/switchyard/internal/telemetry"
)

// otlpReceiver is an in-process OTLP/HTTP receiver: it decodes the protobuf export requests of
// traces and metrics sent to it.
type otlpReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	metrics []*colmetricpb.ExportMetricsServiceRequest
	traces  []*coltracepb.ExportTraceServiceRequest
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		var out proto.Message
		r.mu.Lock()
		defer r.mu.Unlock()
		switch req.URL.Path {
		case "/v1/metrics":
			var m colmetricpb.ExportMetricsServiceRequest
			if err := proto.Unmarshal(b, &m); err != nil {
				t.Errorf("metrics export: %v", err)
			}
			r.metrics, out = append(r.metrics, &m), &colmetricpb.ExportMetricsServiceResponse{}
		case "/v1/traces":
			var m coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(b, &m); err != nil {
				t.Errorf("trace export: %v", err)
			}
			r.traces, out = append(r.traces, &m), &coltracepb.ExportTraceServiceResponse{}
		default:
			t.Errorf("OTLP export to %s", req.URL.Path)
			http.NotFound(w, req)
			return
		}
		body, _ := proto.Marshal(out)
		_, _ = w.Write(body)
	}))
	t.Cleanup(r.Close)
	return r
}

// histPoint is one exported histogram point: its attributes (ints as decimal strings), count
// and sum.
type histPoint struct {
	attrs map[string]string
	count uint64
	sum   float64
}

func (r *otlpReceiver) histograms() map[string][]histPoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]histPoint{}
	for _, req := range r.metrics {
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					for _, dp := range m.GetHistogram().GetDataPoints() {
						p := histPoint{attrs: map[string]string{}, count: dp.GetCount(), sum: dp.GetSum()}
						for _, a := range dp.GetAttributes() {
							if iv, ok := a.GetValue().GetValue().(*commonpb.AnyValue_IntValue); ok {
								p.attrs[a.GetKey()] = strconv.FormatInt(iv.IntValue, 10)
							} else {
								p.attrs[a.GetKey()] = a.GetValue().GetStringValue()
							}
						}
						out[m.GetName()] = append(out[m.GetName()], p)
					}
				}
			}
		}
	}
	return out
}

// TestGenAIMetricsOTLPAndPrometheus (issue 23): after a failover (a 500 from the primary, a
// stream from the backup), the gateway's GenAI client metrics reach an in-process OTLP receiver
// under their semconv names and attributes, and /metrics has the same under the semconv's
// Prometheus names; token sums equal the audit record's, the failed attempt's duration carries
// error.type, and the switchyard_* series are still there.
func TestGenAIMetricsOTLPAndPrometheus(t *testing.T) {
	t.Parallel()
	rcv := newOTLPReceiver(t)
	tr, err := telemetry.NewTracing(context.Background(), config.Tracing{Endpoint: rcv.URL, Insecure: true}, "test",
		func(string) string { return "" })
	if err != nil || tr == nil || tr.GenAI == nil {
		t.Fatalf("NewTracing: %v %v", tr, err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) }) // after the gateway stopped, before the receiver
	st, err := sqlite.Open(context.Background(), "sqlite://:memory:")
	if err != nil {
		t.Fatal(err)
	}
	g := startGatewayOpts(t, st, twoDeployments, func(o *server.Options) { o.Tracing = tr },
		oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	g.Fakes["oa-backup"].Script(fp.Behavior{Text: "hello there friend", Deltas: 3})
	hr := callWith(t, g, true, "hi")
	rec := g.generation(t, hr.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 2 {
		t.Fatalf("attempts %d, want 2", len(rec.Attempts))
	}
	served := rec.Attempts[1]
	in := served.Tokens.Input + served.Tokens.Cached + served.Tokens.CacheWrite
	if in == 0 || served.Tokens.Output == 0 {
		t.Fatalf("served attempt has no usage: %+v", served.Tokens)
	}

	// Prometheus, by the semconv's Prometheus mapping.
	fams := scrape(t, g)
	port := func(dep string) string { // the attempt's server.port, from the OTLP points below
		for _, p := range rcv.histogramsAfter(t, tr)[telemetry.MetricOperationDur] {
			if (dep == "primary") == (p.attrs["error.type"] != "") {
				return p.attrs["server.port"]
			}
		}
		return ""
	}
	backupPort, primaryPort := port("backup"), port("primary")
	if backupPort == "" || primaryPort == "" || backupPort == primaryPort {
		t.Fatalf("server.port of the attempts: %q %q", primaryPort, backupPort)
	}
	base := []string{"gen_ai_operation_name=chat", "gen_ai_request_model=gpt-4o-mini", "server_address=127.0.0.1"}
	labels := func(provider, port string, extra ...string) []string {
		return append(append([]string{"gen_ai_provider_name=" + provider, "server_port=" + port}, base...), extra...)
	}
	if m := series(fams, telemetry.PromTokenUsage, labels("reseller", backupPort, "gen_ai_token_type=input")...); m == nil ||
		m.GetHistogram().GetSampleSum() != float64(in) || m.GetHistogram().GetSampleCount() != 1 {
		t.Errorf("%s input = %v, want sum %d", telemetry.PromTokenUsage, m, in)
	}
	if m := series(fams, telemetry.PromTokenUsage, labels("reseller", backupPort, "gen_ai_token_type=output")...); m == nil ||
		m.GetHistogram().GetSampleSum() != float64(served.Tokens.Output) {
		t.Errorf("%s output = %v, want sum %d", telemetry.PromTokenUsage, m, served.Tokens.Output)
	}
	if m := series(fams, telemetry.PromOperationDur, labels("openai", primaryPort, "error_type=upstream_error")...); m == nil ||
		m.GetHistogram().GetSampleCount() != 1 {
		t.Errorf("%s of the failed attempt = %v", telemetry.PromOperationDur, m)
	}
	if m := series(fams, telemetry.PromOperationDur, labels("reseller", backupPort, "error_type=")...); m == nil {
		t.Errorf("%s of the served attempt missing", telemetry.PromOperationDur)
	}
	if m := series(fams, telemetry.PromTimeToFirstChunk, labels("reseller", backupPort)...); m == nil ||
		m.GetHistogram().GetSampleCount() != 1 || m.GetHistogram().GetSampleSum() != *served.FirstTokenMS/1000 {
		t.Errorf("%s = %v, want one observation of %v ms", telemetry.PromTimeToFirstChunk, m, served.FirstTokenMS)
	}
	if fams["switchyard_requests_total"] == nil || fams["switchyard_time_to_first_token_seconds"] == nil {
		t.Error("the switchyard_* series are gone")
	}

	// OTLP, by the semconv's names and attributes.
	h := rcv.histogramsAfter(t, tr)
	find := func(name string, want map[string]string) *histPoint {
		for i, p := range h[name] {
			ok := len(p.attrs) == len(want)
			for k, v := range want {
				ok = ok && p.attrs[k] == v
			}
			if ok {
				return &h[name][i]
			}
		}
		t.Errorf("%s: no point with %v; have %v", name, want, h[name])
		return &histPoint{}
	}
	attrs := func(provider, port string, kv ...string) map[string]string {
		m := map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": "gpt-4o-mini",
			"server.address": "127.0.0.1", "server.port": port}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	if p := find(telemetry.MetricTokenUsage, attrs("reseller", backupPort, "gen_ai.token.type", "input")); p.sum != float64(in) {
		t.Errorf("OTLP input tokens %v, want %d", p.sum, in)
	}
	if p := find(telemetry.MetricTokenUsage, attrs("reseller", backupPort, "gen_ai.token.type", "output")); p.sum != float64(served.Tokens.Output) {
		t.Errorf("OTLP output tokens %v, want %d", p.sum, served.Tokens.Output)
	}
	find(telemetry.MetricOperationDur, attrs("openai", primaryPort, "error.type", "upstream_error"))
	find(telemetry.MetricOperationDur, attrs("reseller", backupPort))
	if p := find(telemetry.MetricTimeToFirstChunk, attrs("reseller", backupPort)); p.count != 1 {
		t.Errorf("OTLP time to first chunk count %d", p.count)
	}
	if len(h[telemetry.MetricTokenUsage]) != 2 {
		t.Errorf("token usage points %v: the failed attempt (no usage) must record none", h[telemetry.MetricTokenUsage])
	}
}

// histogramsAfter flushes the tracing's metrics (and spans) to the receiver once, then returns
// what it received.
func (r *otlpReceiver) histogramsAfter(t *testing.T, tr *telemetry.Tracing) map[string][]histPoint {
	t.Helper()
	r.mu.Lock()
	flushed := len(r.metrics) > 0
	r.mu.Unlock()
	if !flushed {
		if err := tr.Meter.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return r.histograms()
}
