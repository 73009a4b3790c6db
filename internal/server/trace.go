package server

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/telemetry"
	"github.com/switchyard-gw/switchyard/internal/upstream"
)

// traceState is a traced model call's server span and the span ids its attempts' traceparents
// carried upstream (docs/observability.md "Traces"). It lives in the pooled callObs; span is nil
// when the call is not traced (tracing off), or when its new trace is not sampled (then tid is
// its trace id and sampled is false).
type traceState struct {
	span    trace.Span
	ctx     context.Context // the server span's context: the parent of the attempt spans
	tid     trace.TraceID
	sampled bool
	sends   []sentAttempt // one per upstream Send, in dispatch order (reused)
}

// sentAttempt is the span id sent upstream with an attempt to deployment.
type sentAttempt struct {
	deployment string
	sid        trace.SpanID
}

var traceContext = propagation.TraceContext{}

// beginTrace starts the call's server span, a child of the caller's W3C traceparent when it
// sent one, and returns ctx carrying the hook that gives each upstream request its attempt's
// traceparent. Only called with tracing on.
//
// A request without a caller's traceparent whose new trace is not sampled
// (tracing.sample_ratio; telemetry.Tracing.SampleRoot) starts no span: ob.tr.span stays nil and
// only its trace id is kept, for the attempts' unsampled traceparents.
func (s *Server) beginTrace(ctx context.Context, r *http.Request, sf *surface, start time.Time, ob *callObs) context.Context {
	parent := ctx
	if len(r.Header["Traceparent"]) > 0 { // checked first: Extract's Header.Get allocates the key
		parent = traceContext.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	if !trace.SpanContextFromContext(parent).IsValid() {
		tid, sampled, next, ok := s.tracing.SampleRoot(parent)
		if ok && !sampled {
			ob.tr = traceState{tid: tid, sends: ob.tr.sends[:0]}
			return upstream.WithTraceHook(ctx, ob)
		}
		parent = next
	}
	sctx, span := s.tracing.Tracer.Start(parent, operationName(sf.name), trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start))
	sc := span.SpanContext()
	ob.tr = traceState{span: span, ctx: sctx, tid: sc.TraceID(), sampled: sc.IsSampled(), sends: ob.tr.sends[:0]}
	return upstream.WithTraceHook(ctx, ob)
}

// Traceparent implements upstream.TraceHook: a new span id for the attempt, kept to record its
// span with when the call ends.
func (o *callObs) Traceparent(deployment string) string {
	sid := telemetry.NewSpanID()
	o.tr.sends = append(o.tr.sends, sentAttempt{deployment, sid})
	return telemetry.Traceparent(o.tr.tid, sid, o.tr.sampled)
}

// operationName is gen_ai.operation.name of a surface.
func operationName(surface string) string {
	switch surface {
	case SurfaceEmbeddings:
		return "embeddings"
	case SurfaceCountTokens:
		return "count_tokens"
	case SurfaceImages, SurfaceImageEdits:
		return "generate_content"
	}
	return "chat"
}

// endTrace records the attempts' client spans, after the fact with their dispatch times and the
// ids their traceparents carried, and ends the server span: named and attributed by the GenAI
// semantic conventions plus switchyard.* attributes, never prompt or completion text. An
// attempt's span names its provider's server (server.address and server.port from the
// deployment's base_url; none for a caller's own connection), the provider's HTTP status
// (http.response.status_code; absent when no response came), the failure class (error.type)
// and gen_ai.provider.name (telemetry.GenAIProviderName).
func (s *Server) endTrace(rec *audit.Record, ob *callObs, end time.Time) {
	tr := &ob.tr
	span := tr.span
	tr.span = nil
	if !span.IsRecording() {
		span.End()
		tr.ctx = nil
		return
	}
	op := operationName(rec.Surface)
	model := rec.Model
	if len(model) > maxLoggedModel {
		model = model[:maxLoggedModel]
	}
	if ob.model != "" {
		span.SetName(op + " " + ob.model)
	}
	var in, out int64
	var cost float64
	next := 0
	for i := range rec.Attempts {
		a := &rec.Attempts[i]
		aend := a.EndedAt // exact; else (never on the relay's records) the next dispatch or the call's end
		if aend.IsZero() {
			aend = end
			if i+1 < len(rec.Attempts) {
				aend = rec.Attempts[i+1].DispatchedAt
			}
		}
		ctx := tr.ctx
		if next < len(tr.sends) && tr.sends[next].deployment == a.Deployment {
			ctx = telemetry.WithSpanID(ctx, tr.sends[next].sid)
			next++
		}
		ain := a.Tokens.Input + a.Tokens.Cached + a.Tokens.CacheWrite
		in, out, cost = in+ain, out+a.Tokens.Output, cost+a.CostUSD
		peer := s.peerOf(a)
		attrs := []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", op),
			attribute.String("gen_ai.provider.name", peer.provider),
			attribute.String("gen_ai.request.model", a.UpstreamModel),
			attribute.Int64("gen_ai.usage.input_tokens", ain),
			attribute.Int64("gen_ai.usage.output_tokens", a.Tokens.Output),
			attribute.Int64("gen_ai.usage.cache_read.input_tokens", a.Tokens.Cached),
			attribute.String("switchyard.deployment", a.Deployment),
			attribute.String("switchyard.model", a.Model),
			attribute.Int("switchyard.attempt", a.Attempt),
			attribute.String("switchyard.outcome", a.Outcome),
			attribute.String("switchyard.usage_provenance", a.UsageProvenance),
			attribute.Float64("switchyard.cost_usd", a.CostUSD),
		}
		if a.Outcome == audit.OutcomeCompleted || a.Outcome == audit.OutcomeTruncated {
			attrs = append(attrs, attribute.String("gen_ai.response.model", a.UpstreamModel))
		}
		if a.FinishReason != "" {
			attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{a.FinishReason}))
		}
		if a.HeadersMS != nil {
			attrs = append(attrs, attribute.Float64("switchyard.headers_ms", *a.HeadersMS))
		}
		if a.FirstTokenMS != nil {
			attrs = append(attrs, attribute.Float64("switchyard.commit_ms", *a.FirstTokenMS))
		}
		if peer.peer.Address != "" {
			attrs = append(attrs, attribute.String("server.address", peer.peer.Address), attribute.Int("server.port", peer.peer.Port))
		}
		if a.UpstreamStatus > 0 {
			attrs = append(attrs, attribute.Int("http.response.status_code", a.UpstreamStatus))
		}
		if a.ErrorCode != "" {
			attrs = append(attrs, attribute.String("error.type", a.ErrorCode))
		}
		_, as := s.tracing.Tracer.Start(ctx, op+" "+a.UpstreamModel, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(a.DispatchedAt), trace.WithAttributes(attrs...))
		if a.ErrorCode != "" && a.ErrorCode != "cancelled" {
			as.SetStatus(codes.Error, a.ErrorCode)
		}
		as.End(trace.WithTimestamp(aend))
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", op),
		attribute.String("gen_ai.request.model", model),
		attribute.Int64("gen_ai.usage.input_tokens", in),
		attribute.Int64("gen_ai.usage.output_tokens", out),
		attribute.Int("http.response.status_code", rec.Status),
		attribute.String("switchyard.request_id", rec.RequestID),
		attribute.String("switchyard.surface", rec.Surface),
		attribute.Bool("switchyard.stream", rec.Stream),
		attribute.Int("switchyard.attempts", len(rec.Attempts)),
		attribute.Float64("switchyard.cost_usd", cost),
	}
	if ob.callerRID != "" {
		attrs = append(attrs, attribute.String("switchyard.caller_request_id", ob.callerRID))
	}
	if ob.model != "" {
		attrs = append(attrs, attribute.String("switchyard.model", ob.model))
	}
	if n := len(rec.Attempts); n > 0 {
		a := &rec.Attempts[n-1]
		attrs = append(attrs, attribute.String("gen_ai.provider.name", s.peerOf(a).provider),
			attribute.String("switchyard.deployment", a.Deployment), attribute.String("switchyard.outcome", a.Outcome))
		if a.Outcome == audit.OutcomeCompleted || a.Outcome == audit.OutcomeTruncated {
			attrs = append(attrs, attribute.String("gen_ai.response.model", a.UpstreamModel))
		}
		if a.FirstTokenMS != nil {
			attrs = append(attrs, attribute.Float64("switchyard.commit_ms", *a.FirstTokenMS))
		}
		if a.FinishReason != "" {
			attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{a.FinishReason}))
		}
	}
	if rec.ErrorCode != "" {
		attrs = append(attrs, attribute.String("error.type", rec.ErrorCode))
	}
	span.SetAttributes(attrs...)
	if rec.Status >= 500 || rec.ErrorCode == "upstream_truncated" {
		span.SetStatus(codes.Error, rec.ErrorCode)
	}
	span.End(trace.WithTimestamp(end))
	tr.ctx = nil
}
