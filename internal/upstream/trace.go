package upstream

import "context"

// TraceHook gives each upstream request of a traced model call its W3C traceparent (the
// attempt's span, recorded later by the server: docs/observability.md). Traceparent is called
// once per Send, in dispatch order, with the deployment's name; "" sends none. The Sends of one
// call are sequential.
type TraceHook interface {
	Traceparent(deployment string) string
}

type traceHookKey struct{}

// WithTraceHook returns ctx carrying h for the Sends made with it.
func WithTraceHook(ctx context.Context, h TraceHook) context.Context {
	return context.WithValue(ctx, traceHookKey{}, h)
}

// traceparent is the traceparent of a Send made with ctx; "" when the call is not traced.
func traceparent(ctx context.Context, deployment string) string {
	if h, ok := ctx.Value(traceHookKey{}).(TraceHook); ok {
		return h.Traceparent(deployment)
	}
	return ""
}
