package telemetry

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-gw/switchyard/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Tracing is off unless an endpoint is configured or in the environment; OTEL_SDK_DISABLED wins.
func TestTracingEnabled(t *testing.T) {
	for _, c := range []struct {
		cfg  config.Tracing
		env  map[string]string
		want bool
	}{
		{config.Tracing{}, nil, false},
		{config.Tracing{Endpoint: "http://collector:4318"}, nil, true},
		{config.Tracing{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{config.Tracing{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{config.Tracing{Endpoint: "http://c:4318"}, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := Enabled(c.cfg, env(c.env)); got != c.want {
			t.Errorf("Enabled(%+v, %v) = %v", c.cfg, c.env, got)
		}
		tr, err := NewTracing(context.Background(), c.cfg, "v", env(c.env))
		if err != nil || (tr != nil) != c.want {
			t.Errorf("NewTracing(%+v, %v) = %v, %v", c.cfg, c.env, tr, err)
		}
		_ = tr.Shutdown(context.Background())
	}
}

// The OTLP/HTTP exporter wiring: spans reach an OTLP receiver (an in-process HTTP server decoding
// the protobuf export request) at tracing.endpoint + /v1/traces, with service.name, the span's
// attributes, and the preset span id of WithSpanID.
func TestTracingExportsOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []*coltracepb.ExportTraceServiceRequest
	var paths []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("not an OTLP protobuf export: %v", err)
		}
		mu.Lock()
		got, paths = append(got, &req), append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer ts.Close()
	tr, err := NewTracing(context.Background(), config.Tracing{Endpoint: ts.URL, Insecure: true, ServiceName: "gw-test"}, "1.2.3", env(nil))
	if err != nil || tr == nil {
		t.Fatalf("NewTracing: %v %v", tr, err)
	}
	sid := NewSpanID()
	ctx, span := tr.Tracer.Start(context.Background(), "chat gpt-4o", trace.WithSpanKind(trace.SpanKindServer))
	span.SetAttributes(attribute.String("gen_ai.operation.name", "chat"))
	_, child := tr.Tracer.Start(WithSpanID(ctx, sid), "chat gpt-4o-2024", trace.WithSpanKind(trace.SpanKindClient))
	child.End()
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("the receiver got no export")
	}
	if paths[0] != "/v1/traces" {
		t.Errorf("export path %q, want /v1/traces", paths[0])
	}
	names := map[string][]byte{}
	service := ""
	for _, req := range got {
		for _, rs := range req.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					names[s.GetName()] = s.GetSpanId()
				}
			}
		}
	}
	if service != "gw-test" {
		t.Errorf("service.name %q", service)
	}
	if _, ok := names["chat gpt-4o"]; !ok {
		t.Errorf("spans %v lack the server span", names)
	}
	if id := names["chat gpt-4o-2024"]; string(id) != string(sid[:]) {
		t.Errorf("client span id %x, want the preset %s", id, sid)
	}
}

func TestTraceparent(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	if got := Traceparent(tid, sid, true); got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Errorf("Traceparent = %q", got)
	}
	if got := Traceparent(tid, sid, false); got[53:] != "00" {
		t.Errorf("unsampled flags %q", got)
	}
}

// TestSampleRoot: SampleRoot's decision before any span is the decision the provider's sampler
// takes for the same trace id when the span is started: a trace it samples is started with its
// trace id and sampled; one it drops would have been dropped (started with that id, the SDK's
// span is not sampled either). No ratio below 1 configured: it does not decide.
func TestSampleRoot(t *testing.T) {
	ctx := context.Background()
	tracing := func(ratio *float64) *Tracing {
		tr, err := NewTracingWith(ctx, config.Tracing{SampleRatio: ratio}, "test", env(nil), sdktrace.NewSimpleSpanProcessor(tracetest.NewInMemoryExporter()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Shutdown(ctx) })
		return tr
	}
	half, one, zero := 0.5, 1.0, 0.0
	for _, r := range []*float64{nil, &one} {
		if _, _, _, ok := tracing(r).SampleRoot(ctx); ok {
			t.Errorf("ratio %v: SampleRoot decided; want the SDK to", r)
		}
	}
	if _, sampled, _, ok := tracing(&zero).SampleRoot(ctx); !ok || sampled {
		t.Errorf("ratio 0: ok %v sampled %v, want a decision: not sampled", ok, sampled)
	}
	tr := tracing(&half)
	var n [2]int
	for range 400 {
		tid, sampled, next, ok := tr.SampleRoot(ctx)
		if !ok || !tid.IsValid() {
			t.Fatalf("ok %v tid %s", ok, tid)
		}
		if !sampled {
			next = context.WithValue(ctx, traceIDKey{}, tid) // what the SDK would have decided
		}
		_, span := tr.Tracer.Start(next, "x")
		sc := span.SpanContext()
		span.End()
		if sc.TraceID() != tid || sc.IsSampled() != sampled {
			t.Fatalf("SampleRoot: %s sampled %v; the SDK started %s sampled %v", tid, sampled, sc.TraceID(), sc.IsSampled())
		}
		n[btoi(sampled)]++
	}
	if n[0] < 120 || n[1] < 120 {
		t.Errorf("ratio 0.5: %d sampled of 400", n[1])
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The GenAI metrics go over OTLP/HTTP beside the spans: an in-process OTLP receiver gets, at
// tracing.endpoint + /v1/metrics, gen_ai.client.token.usage, gen_ai.client.operation.duration
// and gen_ai.client.operation.time_to_first_chunk with their semconv units, buckets and
// attributes (error.type only on the duration of a failed attempt, gen_ai.token.type only on
// the token usage).
func TestGenAIMetricsExportOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []*colmetricpb.ExportMetricsServiceRequest
	paths := map[string]int{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		if r.URL.Path != "/v1/metrics" {
			out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
			_, _ = w.Write(out)
			return
		}
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("not an OTLP metrics export: %v", err)
		}
		mu.Lock()
		got = append(got, &req)
		mu.Unlock()
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer ts.Close()
	tr, err := NewTracing(context.Background(), config.Tracing{Endpoint: ts.URL, Insecure: true}, "1.2.3", env(nil))
	if err != nil || tr == nil || tr.GenAI == nil {
		t.Fatalf("NewTracing: %v %v", tr, err)
	}
	ok := GenAIAttempt{Operation: "chat", Provider: GenAIProviderName("openai", "openai"), Model: "gpt-4o",
		Peer: PeerOf("https://api.openai.com/v1")}
	failed := ok
	failed.ErrorType = "upstream_server_error"
	ctx := context.Background()
	tr.GenAI.Tokens(ctx, ok, 1200, 34)
	tr.GenAI.Duration(ctx, ok, 0.5)
	tr.GenAI.Duration(ctx, failed, 0.05)
	tr.GenAI.FirstChunk(ctx, ok, 0.2)
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if paths["/v1/metrics"] == 0 {
		t.Fatalf("no metrics export; paths %v", paths)
	}
	type point struct {
		attrs map[string]string
		count uint64
		sum   float64
	}
	metrics := map[string][]point{}
	units := map[string]string{}
	bounds := map[string][]float64{}
	for _, req := range got {
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					units[m.GetName()] = m.GetUnit()
					for _, dp := range m.GetHistogram().GetDataPoints() {
						p := point{attrs: map[string]string{}, count: dp.GetCount(), sum: dp.GetSum()}
						for _, a := range dp.GetAttributes() {
							v := a.GetValue().GetStringValue()
							if a.GetValue().GetIntValue() != 0 {
								v = strconv.FormatInt(a.GetValue().GetIntValue(), 10)
							}
							p.attrs[a.GetKey()] = v
						}
						metrics[m.GetName()] = append(metrics[m.GetName()], p)
						bounds[m.GetName()] = dp.GetExplicitBounds()
					}
				}
			}
		}
	}
	want := map[string]string{MetricTokenUsage: "{token}", MetricOperationDur: "s", MetricTimeToFirstChunk: "s"}
	for name, unit := range want {
		if units[name] != unit {
			t.Errorf("%s: unit %q, want %q (exported: %v)", name, units[name], unit, units)
		}
	}
	if !slices.Equal(bounds[MetricTokenUsage], TokenBuckets) || !slices.Equal(bounds[MetricOperationDur], DurationBuckets) {
		t.Errorf("buckets %v", bounds)
	}
	base := map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-4o", "server.address": "api.openai.com", "server.port": "443"}
	with := func(extra ...string) map[string]string {
		m := maps.Clone(base)
		for i := 0; i < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	find := func(name string, attrs map[string]string) *point {
		for i, p := range metrics[name] {
			if maps.Equal(p.attrs, attrs) {
				return &metrics[name][i]
			}
		}
		t.Errorf("%s: no point with %v; have %v", name, attrs, metrics[name])
		return &point{}
	}
	if p := find(MetricTokenUsage, with("gen_ai.token.type", "input")); p.sum != 1200 || p.count != 1 {
		t.Errorf("input tokens %+v", p)
	}
	if p := find(MetricTokenUsage, with("gen_ai.token.type", "output")); p.sum != 34 {
		t.Errorf("output tokens %+v", p)
	}
	if p := find(MetricOperationDur, base); p.sum != 0.5 {
		t.Errorf("duration %+v", p)
	}
	if p := find(MetricOperationDur, with("error.type", "upstream_server_error")); p.sum != 0.05 {
		t.Errorf("failed duration %+v", p)
	}
	if p := find(MetricTimeToFirstChunk, base); p.sum != 0.2 {
		t.Errorf("first chunk %+v", p)
	}
}

// Metrics go over OTLP only with an endpoint that is not for traces alone.
func TestGenAIMetricsEnabled(t *testing.T) {
	for _, c := range []struct {
		cfg  config.Tracing
		env  map[string]string
		want bool
	}{
		{config.Tracing{}, nil, false},
		{config.Tracing{Endpoint: "http://c:4318"}, nil, true},
		{config.Tracing{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{config.Tracing{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, false},
		{config.Tracing{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4318/v1/metrics"}, true},
		{config.Tracing{Endpoint: "http://c:4318"}, map[string]string{"OTEL_METRICS_EXPORTER": "none"}, false},
	} {
		if got := MetricsEnabled(c.cfg, env(c.env)); got != c.want {
			t.Errorf("MetricsEnabled(%+v, %v) = %v", c.cfg, c.env, got)
		}
	}
	for in, want := range map[string]string{
		"http://c:4318": "http://c:4318/v1/metrics", "http://c:4318/": "http://c:4318/v1/metrics",
		"http://c:4318/v1/traces": "http://c:4318/v1/metrics", "https://c/otlp": "https://c/otlp/v1/metrics",
	} {
		if got, _ := metricsURL(in); got != want {
			t.Errorf("metricsURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGenAIProviderNameAndPeer(t *testing.T) {
	for _, c := range [][3]string{{"openai", "openai", "openai"}, {"anthropic", "anthropic", "anthropic"},
		{"groq", "openai", "groq"}, {"", "anthropic", "anthropic"}, {"aws-prod", "bedrock", "aws.bedrock"},
		{"gcp", "vertex", "gcp.vertex_ai"}, {"azure-eu", "azure", "azure.ai.openai"}, {"reseller", "openai", "reseller"}} {
		if got := GenAIProviderName(c[0], c[1]); got != c[2] {
			t.Errorf("GenAIProviderName(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
	for in, want := range map[string]Peer{
		"https://api.openai.com/v1": {"api.openai.com", 443}, "http://127.0.0.1:9000/v1": {"127.0.0.1", 9000},
		"http://fake": {"fake", 80}, "http://[::1]:8080": {"::1", 8080}, "not a url": {}, "": {},
	} {
		if got := PeerOf(in); got != want {
			t.Errorf("PeerOf(%q) = %+v, want %+v", in, got, want)
		}
	}
}
