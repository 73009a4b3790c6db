package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
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
