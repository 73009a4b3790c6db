package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	openaiopt "github.com/openai/openai-go/v3/option"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-gw/switchyard/internal/config"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/server"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
	"github.com/switchyard-gw/switchyard/internal/telemetry"
)

// startTraced is startTwo with tracing on, its spans kept in memory.
func startTraced(t *testing.T) (*gateway, *tracetest.InMemoryExporter) {
	t.Helper()
	return startTracedWith(t, config.Tracing{})
}

// startTracedWith is startTraced with tracing configuration tc.
func startTracedWith(t *testing.T, tc config.Tracing) (*gateway, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := telemetry.NewTracingWith(context.Background(), tc, "test", func(string) string { return "" },
		sdktrace.NewSimpleSpanProcessor(exp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	st, err := sqlite.Open(context.Background(), "sqlite://:memory:")
	if err != nil {
		t.Fatal(err)
	}
	g := startGatewayOpts(t, st, twoDeployments, func(o *server.Options) { o.Tracing = tr },
		oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	return g, exp
}

func attrs(kv []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, a := range kv {
		m[string(a.Key)] = a.Value
	}
	return m
}

// TestTraceSpans: a failover under a caller's traceparent is one server span, child of the
// caller's span, and one client span per attempt, children of it, named and attributed by the
// GenAI semantic conventions; each upstream request carried its attempt span's traceparent;
// no prompt or completion text is in any span (issue 12 item 2).
func TestTraceSpans(t *testing.T) {
	t.Parallel()
	g, exp := startTraced(t)
	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	g.Fakes["oa-backup"].Script(fp.Behavior{Text: "secret completion words", Deltas: 3})
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	hr := callWith(t, g, true, "secret prompt words", openaiopt.WithHeader("Traceparent", "00-"+callerTrace+"-"+callerSpan+"-01"),
		openaiopt.WithHeader("X-Request-Id", "caller-7"))
	rid := hr.Header.Get("X-Request-Id")
	rec := g.generation(t, rid)

	var srv *tracetest.SpanStub
	var clients []tracetest.SpanStub
	spans := exp.GetSpans()
	for i := range spans {
		switch spans[i].SpanKind {
		case trace.SpanKindServer:
			srv = &spans[i]
		case trace.SpanKindClient:
			clients = append(clients, spans[i])
		}
	}
	if srv == nil || len(clients) != 2 {
		t.Fatalf("spans %d: server %v, %d client spans; want 1 and 2", len(spans), srv != nil, len(clients))
	}
	if srv.Name != "chat gpt-4o-mini" || srv.SpanContext.TraceID().String() != callerTrace || srv.Parent.SpanID().String() != callerSpan {
		t.Errorf("server span %q trace %s parent %s: want chat gpt-4o-mini in the caller's trace under its span", srv.Name, srv.SpanContext.TraceID(), srv.Parent.SpanID())
	}
	sa := attrs(srv.Attributes)
	for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
		"gen_ai.provider.name": "reseller", "gen_ai.response.model": "gpt-4o-mini-2024-07-18", "switchyard.request_id": rid,
		"switchyard.caller_request_id": "caller-7", "switchyard.deployment": "oa-backup", "switchyard.outcome": "completed"} {
		if got := sa[k].AsString(); got != want {
			t.Errorf("server span %s = %q, want %q", k, got, want)
		}
	}
	if sa["switchyard.attempts"].AsInt64() != 2 || sa["gen_ai.usage.output_tokens"].AsInt64() != rec.Attempts[1].Tokens.Output || sa["gen_ai.usage.output_tokens"].AsInt64() == 0 {
		t.Errorf("server span attempts %v output tokens %v (record %d)", sa["switchyard.attempts"], sa["gen_ai.usage.output_tokens"], rec.Attempts[1].Tokens.Output)
	}
	if _, ok := sa["switchyard.commit_ms"]; !ok {
		t.Error("server span lacks switchyard.commit_ms")
	}
	if got := sa["gen_ai.response.finish_reasons"].AsStringSlice(); len(got) != 1 || got[0] != "stop" {
		t.Errorf("server span gen_ai.response.finish_reasons = %q, want [stop]", got)
	}
	// Attempt spans end when their attempt ended, not at the next dispatch or the call's end.
	var ends [3]time.Time
	var starts [3]time.Time
	for _, c := range clients {
		n := attrs(c.Attributes)["switchyard.attempt"].AsInt64()
		if n >= 1 && n <= 2 {
			ends[n], starts[n] = c.EndTime, c.StartTime
		}
	}
	if !ends[1].Before(starts[2]) || !ends[2].Before(srv.EndTime) || !starts[2].Before(ends[2]) {
		t.Errorf("attempt spans: 1 ends %v, 2 starts %v and ends %v, server ends %v: want each attempt's own end", ends[1], starts[2], ends[2], srv.EndTime)
	}
	ups := [][]fp.Request{g.Fakes["oa-primary"].Requests(), g.Fakes["oa-backup"].Requests()}
	var ports [2]int64
	for i, c := range clients {
		ca := attrs(c.Attributes)
		if c.Parent.SpanID() != srv.SpanContext.SpanID() || c.SpanContext.TraceID() != srv.SpanContext.TraceID() {
			t.Errorf("client span %d is not a child of the server span", i)
		}
		n := ca["switchyard.attempt"].AsInt64()
		if n < 1 || n > 2 {
			t.Fatalf("client span attempt %d", n)
		}
		a := rec.Attempts[n-1]
		if c.Name != "chat "+a.UpstreamModel || ca["switchyard.deployment"].AsString() != a.Deployment || ca["gen_ai.provider.name"].AsString() != a.Provider ||
			ca["gen_ai.request.model"].AsString() != a.UpstreamModel || ca["switchyard.outcome"].AsString() != a.Outcome {
			t.Errorf("client span %q %v, want attempt %+v", c.Name, ca, a)
		}
		if !c.StartTime.Equal(a.DispatchedAt) {
			t.Errorf("client span %d starts %v, dispatched %v", n, c.StartTime, a.DispatchedAt)
		}
		if n == 1 && ca["error.type"].AsString() != "upstream_error" {
			t.Errorf("failed attempt error.type %q, want upstream_error", ca["error.type"].AsString())
		}
		// The provider's server and HTTP status (issue 23): the fakes listen on loopback ports.
		if st := ca["http.response.status_code"].AsInt64(); st != int64(a.UpstreamStatus) || st != []int64{0, 500, 200}[n] {
			t.Errorf("attempt %d http.response.status_code %d, record %d", n, st, a.UpstreamStatus)
		}
		if ca["server.address"].AsString() != "127.0.0.1" || ca["server.port"].AsInt64() <= 0 {
			t.Errorf("attempt %d server.address %q server.port %d, want the fake's loopback address", n, ca["server.address"].AsString(), ca["server.port"].AsInt64())
		}
		ports[n-1] = ca["server.port"].AsInt64()
		if _, ok := ca["gen_ai.response.finish_reasons"]; n == 1 && ok {
			t.Errorf("failed attempt has finish reasons %v", ca["gen_ai.response.finish_reasons"])
		}
		if got := ca["gen_ai.response.finish_reasons"].AsStringSlice(); n == 2 && (len(got) != 1 || got[0] != "stop") {
			t.Errorf("served attempt gen_ai.response.finish_reasons = %q, want [stop]", got)
		}
		if n == 2 && (ca["gen_ai.usage.output_tokens"].AsInt64() != a.Tokens.Output || ca["gen_ai.response.model"].AsString() != a.UpstreamModel) {
			t.Errorf("served attempt %v", ca)
		}
		up := ups[n-1]
		if len(up) != 1 {
			t.Fatalf("deployment %s hits %d", a.Deployment, len(up))
		}
		want := "00-" + callerTrace + "-" + c.SpanContext.SpanID().String() + "-01"
		if got := up[0].Header.Get("Traceparent"); got != want {
			t.Errorf("upstream traceparent of attempt %d = %q, want %q", n, got, want)
		}
	}
	if ports[0] == ports[1] {
		t.Errorf("both attempts name server.port %d; the two fakes listen on different ports", ports[0])
	}
	if sa["gen_ai.provider.name"].AsString() != "reseller" || attrs(clients[0].Attributes)["gen_ai.provider.name"].AsString() == "" {
		t.Errorf("gen_ai.provider.name missing")
	}
	for _, s := range spans {
		for _, a := range s.Attributes {
			if v := a.Value.Emit(); strings.Contains(v, "secret prompt") || strings.Contains(v, "secret completion") {
				t.Errorf("span %q attribute %s holds message text", s.Name, a.Key)
			}
		}
	}
}

// TestTraceFinishReasons: a non-stream answer's finish reason (the OpenAI finish_reason as the
// provider sent it) reaches its attempt span and the server span.
func TestTraceFinishReasons(t *testing.T) {
	t.Parallel()
	g, exp := startTraced(t)
	g.Fakes["oa-primary"].Script(fp.Behavior{Text: "hello"})
	callWith(t, g, false, "hi")
	var found int
	for _, s := range exp.GetSpans() {
		got := attrs(s.Attributes)["gen_ai.response.finish_reasons"].AsStringSlice()
		if len(got) != 1 || got[0] != "stop" {
			t.Errorf("%v span %q finish reasons %q, want [stop]", s.SpanKind, s.Name, got)
		}
		found++
	}
	if found != 2 {
		t.Errorf("%d spans, want a server and a client span", found)
	}
}

// Without tracing no traceparent goes upstream.
func TestTraceOff(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	callWith(t, g, false, "hello", openaiopt.WithHeader("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
	up := g.Fakes["oa-primary"].Requests()
	if len(up) != 1 || up[0].Header.Get("Traceparent") != "" {
		t.Errorf("upstream requests %d, traceparent %q: want none with tracing off", len(up), up[0].Header.Get("Traceparent"))
	}
}

// TestTraceUnsampledRoot: with tracing.sample_ratio 0 a request without a traceparent starts
// no span (none is exported) yet its attempt still sends a valid traceparent upstream, flagged
// unsampled; a caller's sampled traceparent is still followed (parent-based sampling): its
// spans are recorded in the caller's trace.
func TestTraceUnsampledRoot(t *testing.T) {
	t.Parallel()
	zero := 0.0
	g, exp := startTracedWith(t, config.Tracing{SampleRatio: &zero})
	g.Fakes["oa-primary"].Script(fp.Behavior{Text: "hello"}, fp.Behavior{Text: "hello"}, fp.Behavior{Text: "hello"})
	callWith(t, g, false, "hi")
	callWith(t, g, false, "hi", openaiopt.WithHeader("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"))
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans exported for unsampled traces, want 0", n)
	}
	up := g.Fakes["oa-primary"].Requests()
	if len(up) != 2 {
		t.Fatalf("upstream requests %d, want 2", len(up))
	}
	tp := up[0].Header.Get("Traceparent")
	if len(tp) != 55 || !strings.HasPrefix(tp, "00-") || !strings.HasSuffix(tp, "-00") {
		t.Fatalf("unsampled root's upstream traceparent %q, want 00-<trace>-<span>-00", tp)
	}
	if tid, err := trace.TraceIDFromHex(tp[3:35]); err != nil || !tid.IsValid() {
		t.Errorf("upstream trace id %q: %v", tp[3:35], err)
	}
	if sid, err := trace.SpanIDFromHex(tp[36:52]); err != nil || !sid.IsValid() {
		t.Errorf("upstream span id %q: %v", tp[36:52], err)
	}
	if got := up[1].Header.Get("Traceparent"); !strings.HasPrefix(got, "00-4bf92f3577b34da6a3ce929d0e0e4736-") || !strings.HasSuffix(got, "-00") {
		t.Errorf("caller's unsampled trace: upstream traceparent %q, want the caller's trace, unsampled", got)
	}
	callWith(t, g, false, "hi", openaiopt.WithHeader("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("caller's sampled trace: %d spans, want a server and a client span", len(spans))
	}
	for _, sp := range spans {
		if sp.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("span %q in trace %s, want the caller's", sp.Name, sp.SpanContext.TraceID())
		}
	}
}
