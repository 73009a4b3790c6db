package telemetry

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-gw/switchyard/internal/config"
)

// Tracing is the gateway's tracer provider; nil means tracing is off (no span is created, no
// allocation is made on the request path). Build it with NewTracing (OTLP) or NewTracingWith
// (tests: an in-memory exporter), and Shutdown it after the listener closed.
type Tracing struct {
	Provider *sdktrace.TracerProvider
	Tracer   trace.Tracer
	// root is the ratio sampler of new traces when tracing.sample_ratio is below 1 (the
	// provider's sampler is ParentBased of it), nil otherwise: SampleRoot asks it before a
	// span is started, so that a request whose new trace is not sampled starts no span at all.
	root sdktrace.Sampler
	// Meter is the meter provider of the GenAI metrics exported over OTLP beside the spans
	// (MetricsEnabled); nil when they are not exported. GenAI records into it (nil: records
	// nothing).
	Meter *sdkmetric.MeterProvider
	GenAI *GenAIMetrics
}

// Enabled reports whether the tracing configuration or the environment names an OTLP
// endpoint: tracing.endpoint, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT.
// OTEL_SDK_DISABLED=true turns it off whatever the rest says.
func Enabled(t config.Tracing, getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return t.Endpoint != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// MetricsEnabled reports whether the GenAI metrics go over OTLP too: tracing is on and the
// OTLP endpoint is not one for traces only (tracing.endpoint, OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set), and OTEL_METRICS_EXPORTER is not "none".
func MetricsEnabled(t config.Tracing, getenv func(string) string) bool {
	if !Enabled(t, getenv) || strings.EqualFold(getenv("OTEL_METRICS_EXPORTER"), "none") {
		return false
	}
	return t.Endpoint != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
}

// metricsURL is the OTLP/HTTP metrics URL of tracing.endpoint: its path with a trailing
// /v1/traces replaced, or /v1/metrics appended.
func metricsURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1/traces") + "/v1/metrics"
	return u.String(), nil
}

// newMetricExporter is the OTLP metric exporter of t and the environment, over the protocol
// proto (grpc, else HTTP protobuf).
func newMetricExporter(ctx context.Context, t config.Tracing, proto string) (sdkmetric.Exporter, error) {
	if proto == "grpc" {
		var opts []otlpmetricgrpc.Option
		if t.Endpoint != "" {
			if strings.Contains(t.Endpoint, "://") {
				opts = append(opts, otlpmetricgrpc.WithEndpointURL(t.Endpoint))
			} else {
				opts = append(opts, otlpmetricgrpc.WithEndpoint(t.Endpoint))
			}
		}
		if t.Insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		if len(t.Headers) > 0 {
			opts = append(opts, otlpmetricgrpc.WithHeaders(t.Headers))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	var opts []otlpmetrichttp.Option
	if t.Endpoint != "" {
		u, err := metricsURL(t.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("tracing.endpoint: %w", err)
		}
		opts = append(opts, otlpmetrichttp.WithEndpointURL(u))
	}
	if t.Insecure {
		opts = append(opts, otlpmetrichttp.WithInsecure())
	}
	if len(t.Headers) > 0 {
		opts = append(opts, otlpmetrichttp.WithHeaders(t.Headers))
	}
	return otlpmetrichttp.New(ctx, opts...)
}

// NewTracing returns the OTLP tracing of t and the standard OTEL_* variables, or nil when it is
// off (Enabled). The exporter is OTLP/HTTP protobuf unless the protocol (tracing.protocol, else
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL) is grpc; spans are
// batched. version is the service.version.
func NewTracing(ctx context.Context, t config.Tracing, version string, getenv func(string) string) (*Tracing, error) {
	if !Enabled(t, getenv) {
		return nil, nil
	}
	proto := t.Protocol
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	}
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch proto {
	case "grpc":
		var opts []otlptracegrpc.Option
		if t.Endpoint != "" {
			if strings.Contains(t.Endpoint, "://") {
				opts = append(opts, otlptracegrpc.WithEndpointURL(t.Endpoint))
			} else {
				opts = append(opts, otlptracegrpc.WithEndpoint(t.Endpoint))
			}
		}
		if t.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		if len(t.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(t.Headers))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	case "", "http/protobuf", "http":
		var opts []otlptracehttp.Option
		if t.Endpoint != "" {
			u, perr := url.Parse(t.Endpoint)
			if perr != nil {
				return nil, fmt.Errorf("tracing.endpoint: %w", perr)
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/traces"
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		}
		if t.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		if len(t.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(t.Headers))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("tracing: unsupported OTLP protocol %q: want http/protobuf or grpc", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	var readers []sdkmetric.Reader
	if MetricsEnabled(t, getenv) {
		mexp, err := newMetricExporter(ctx, t, proto)
		if err != nil {
			return nil, fmt.Errorf("tracing: metrics: %w", err)
		}
		// Every OTEL_METRIC_EXPORT_INTERVAL (default 60 s) and at Shutdown.
		readers = append(readers, sdkmetric.NewPeriodicReader(mexp))
	}
	return NewTracingWith(ctx, t, version, getenv, sdktrace.NewBatchSpanProcessor(exp), readers...)
}

// NewTracingWith is NewTracing with the span processor given (tests pass a
// sdktrace.NewSimpleSpanProcessor of a tracetest.InMemoryExporter) and the metric readers of
// the GenAI metrics (none: they are not exported; tests pass a sdkmetric.NewManualReader).
func NewTracingWith(ctx context.Context, t config.Tracing, version string, getenv func(string) string, sp sdktrace.SpanProcessor, readers ...sdkmetric.Reader) (*Tracing, error) {
	name := t.ServiceName
	if name == "" {
		name = getenv("OTEL_SERVICE_NAME")
	}
	if name == "" {
		name = "switchyard"
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", name), attribute.String("service.version", version)))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSpanProcessor(sp), sdktrace.WithIDGenerator(idGenerator{})}
	var root sdktrace.Sampler
	if t.SampleRatio != nil {
		root = sdktrace.TraceIDRatioBased(*t.SampleRatio)
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(root)))
	} // else the SDK reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default: parent-based, always on)
	tp := sdktrace.NewTracerProvider(opts...)
	tr := &Tracing{Provider: tp, Tracer: tp.Tracer("github.com/switchyard-gw/switchyard")}
	if t.SampleRatio != nil && *t.SampleRatio < 1 {
		tr.root = root
	}
	if len(readers) > 0 {
		tr.Meter = meterProvider(readers, sdkmetric.WithResource(res))
		if tr.GenAI, err = NewGenAIMetrics(tr.Meter); err != nil {
			return nil, fmt.Errorf("tracing: metrics: %w", err)
		}
	}
	return tr, nil
}

// SampleRoot decides, before any span exists, whether a new trace (a request without a
// caller's traceparent) is sampled, and gives it its trace id. sampled true: start the span
// with ctx (its trace id is tid, so the provider's sampler takes the same decision). sampled
// false: the trace is not sampled (tracing.sample_ratio), and the caller starts no span: the
// SDK's non-recording span would cost its sampler call, span and context allocations on every
// unsampled request for nothing recorded; tid still goes upstream in the attempts'
// traceparents, flagged unsampled, as the SDK's non-recording span's id would. ok false: no
// ratio sampler is configured (every new trace is sampled, or the OTEL_TRACES_SAMPLER
// variables decide): start the span as usual.
func (t *Tracing) SampleRoot(ctx context.Context) (tid trace.TraceID, sampled bool, next context.Context, ok bool) {
	if t.root == nil {
		return tid, false, ctx, false
	}
	tid = newTraceID()
	if t.root.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: tid}).Decision != sdktrace.RecordAndSample {
		return tid, false, ctx, true
	}
	return tid, true, context.WithValue(ctx, traceIDKey{}, tid), true
}

// newTraceID returns a random, valid trace id.
func newTraceID() trace.TraceID {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid
}

// Shutdown exports the spans still batched and the metrics collected since the last export,
// within ctx.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	err := t.Provider.Shutdown(ctx)
	if t.Meter != nil {
		if merr := t.Meter.Shutdown(ctx); err == nil {
			err = merr
		}
	}
	return err
}

// NewSpanID returns a random, valid span id (for an attempt's traceparent, sent before its
// span is recorded; WithSpanID gives the span that id).
func NewSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

type spanIDKey struct{}

// traceIDKey carries the trace id SampleRoot chose for the root span started with its context.
type traceIDKey struct{}

// WithSpanID makes the next span started with ctx (by a Tracing's tracer) take the id sid:
// an attempt's span is recorded after the fact with the id its traceparent carried upstream.
func WithSpanID(ctx context.Context, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, spanIDKey{}, sid)
}

// idGenerator is the SDK's random generator, except that a span id preset with WithSpanID and
// a root's trace id chosen by SampleRoot are used as they are.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	tid, ok := ctx.Value(traceIDKey{}).(trace.TraceID)
	if !ok || !tid.IsValid() {
		tid = newTraceID()
	}
	return tid, idGenerator{}.NewSpanID(ctx, tid)
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if sid, ok := ctx.Value(spanIDKey{}).(trace.SpanID); ok && sid.IsValid() {
		return sid
	}
	return NewSpanID()
}

// Traceparent formats a W3C traceparent header value: version 00, the trace and span ids, the
// sampled flag.
func Traceparent(tid trace.TraceID, sid trace.SpanID, sampled bool) string {
	var b [55]byte
	copy(b[:], "00-")
	hexTo(b[3:35], tid[:])
	b[35] = '-'
	hexTo(b[36:52], sid[:])
	copy(b[52:], "-00")
	if sampled {
		b[54] = '1'
	}
	return string(b[:])
}

func hexTo(dst, src []byte) {
	const digits = "0123456789abcdef"
	for i, c := range src {
		dst[2*i], dst[2*i+1] = digits[c>>4], digits[c&15]
	}
}

// Ms converts milliseconds of the audit to a duration.
func Ms(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
