package telemetry

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The GenAI semantic conventions' metric names (docs/observability.md "GenAI metrics"), and
// their Prometheus names by the OpenTelemetry-to-Prometheus mapping: dots become underscores,
// the unit "s" adds "_seconds", the annotation "{token}" adds nothing.
const (
	MetricTokenUsage       = "gen_ai.client.token.usage"                   // histogram, {token}
	MetricOperationDur     = "gen_ai.client.operation.duration"            // histogram, s
	MetricTimeToFirstChunk = "gen_ai.client.operation.time_to_first_chunk" // histogram, s

	PromTokenUsage       = "gen_ai_client_token_usage"
	PromOperationDur     = "gen_ai_client_operation_duration_seconds"
	PromTimeToFirstChunk = "gen_ai_client_operation_time_to_first_chunk_seconds"
)

// The semconv's explicit bucket boundaries of the GenAI client histograms.
var (
	// TokenBuckets are gen_ai.client.token.usage's, in tokens: powers of 4 from 1 to 4^13.
	TokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	// DurationBuckets are gen_ai.client.operation.duration's, in seconds: 10 ms doubling to 81.92 s.
	DurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	// FirstChunkBuckets are gen_ai.client.operation.time_to_first_chunk's, in seconds.
	FirstChunkBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
)

// GenAIProviderName is gen_ai.provider.name of a deployment: the semconv's well-known value
// for the service behind it, from the deployment's provider id and platform (contract.md
// round 3: openai, anthropic, bedrock, vertex, azure). A platform that hosts the model names
// it: "aws.bedrock", "gcp.vertex_ai", "azure.ai.openai". On a dialect's own API the provider
// id is used as it is ("openai", "anthropic", or a custom value, which the semconv allows,
// e.g. "groq" when the deployment is named so), and a deployment without a provider id is
// named by its platform.
func GenAIProviderName(provider, platform string) string {
	switch platform {
	case "bedrock":
		return "aws.bedrock"
	case "vertex":
		return "gcp.vertex_ai"
	case "azure":
		return "azure.ai.openai"
	}
	if provider == "" {
		return platform
	}
	return provider
}

// Peer is the server a deployment's requests go to, as the server.address and server.port
// attributes name it: the base URL's host and port (443 for https, 80 for http when the URL
// names none). Address is "" when the URL has no host (then Port is 0).
type Peer struct {
	Address string
	Port    int
}

// PeerOf parses baseURL (a deployment's base_url) into its Peer; a URL that does not parse
// gives the zero Peer.
func PeerOf(baseURL string) Peer {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return Peer{}
	}
	host, port := u.Hostname(), u.Port()
	p := Peer{Address: host}
	if port != "" {
		p.Port, _ = strconv.Atoi(port)
	} else if strings.EqualFold(u.Scheme, "http") {
		p.Port = 80
	} else {
		p.Port = 443
	}
	if ip := net.ParseIP(host); ip != nil {
		p.Address = ip.String()
	}
	return p
}

// GenAIAttempt is the label set of one attempt's GenAI metrics: every value comes from the
// configuration or a fixed set (the operation, the provider name, the catalog model id, the
// deployment's host and port, the failure class), so the series stay bounded.
type GenAIAttempt struct {
	Operation string // gen_ai.operation.name: chat, embeddings, ...
	Provider  string // gen_ai.provider.name (GenAIProviderName)
	Model     string // gen_ai.request.model: the catalog model id the route serves
	Peer      Peer   // server.address, server.port; zero when unknown (a caller's own connection)
	ErrorType string // error.type: the attempt's failure class; "" on success
}

// GenAIMetrics are the GenAI client instruments of an OpenTelemetry meter (exported over OTLP
// beside the traces); nil records nothing. Attribute sets are built once per label set.
type GenAIMetrics struct {
	tokens, duration, firstChunk metric.Float64Histogram

	mu   sync.RWMutex
	sets map[genAIKey]attribute.Set
}

type genAIKey struct {
	a     GenAIAttempt
	token string // gen_ai.token.type; "" for the latency instruments
}

// NewGenAIMetrics creates the instruments on mp's meter, with the semconv's buckets.
func NewGenAIMetrics(mp metric.MeterProvider) (*GenAIMetrics, error) {
	m := mp.Meter("github.com/switchyard-gw/switchyard")
	g := &GenAIMetrics{sets: map[genAIKey]attribute.Set{}}
	var err error
	if g.tokens, err = m.Float64Histogram(MetricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(TokenBuckets...)); err != nil {
		return nil, err
	}
	if g.duration, err = m.Float64Histogram(MetricOperationDur, metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(DurationBuckets...)); err != nil {
		return nil, err
	}
	if g.firstChunk, err = m.Float64Histogram(MetricTimeToFirstChunk, metric.WithUnit("s"),
		metric.WithDescription("Time to receive the first chunk of a streamed response, from the request's dispatch."),
		metric.WithExplicitBucketBoundaries(FirstChunkBuckets...)); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *GenAIMetrics) set(k genAIKey) attribute.Set {
	g.mu.RLock()
	s, ok := g.sets[k]
	g.mu.RUnlock()
	if ok {
		return s
	}
	kv := make([]attribute.KeyValue, 0, 7)
	kv = append(kv, attribute.String("gen_ai.operation.name", k.a.Operation),
		attribute.String("gen_ai.provider.name", k.a.Provider),
		attribute.String("gen_ai.request.model", k.a.Model))
	if k.a.Peer.Address != "" {
		kv = append(kv, attribute.String("server.address", k.a.Peer.Address), attribute.Int("server.port", k.a.Peer.Port))
	}
	if k.token != "" {
		kv = append(kv, attribute.String("gen_ai.token.type", k.token))
	} else if k.a.ErrorType != "" {
		kv = append(kv, attribute.String("error.type", k.a.ErrorType))
	}
	s = attribute.NewSet(kv...)
	g.mu.Lock()
	g.sets[k] = s
	g.mu.Unlock()
	return s
}

// Tokens records an attempt's input and output token counts (gen_ai.client.token.usage).
func (g *GenAIMetrics) Tokens(ctx context.Context, a GenAIAttempt, input, output int64) {
	if g == nil {
		return
	}
	g.tokens.Record(ctx, float64(input), metric.WithAttributeSet(g.set(genAIKey{a, "input"})))
	g.tokens.Record(ctx, float64(output), metric.WithAttributeSet(g.set(genAIKey{a, "output"})))
}

// Duration records an attempt's seconds from dispatch to its end (gen_ai.client.operation.duration).
func (g *GenAIMetrics) Duration(ctx context.Context, a GenAIAttempt, seconds float64) {
	if g == nil {
		return
	}
	g.duration.Record(ctx, seconds, metric.WithAttributeSet(g.set(genAIKey{a: a})))
}

// FirstChunk records a streamed attempt's seconds from dispatch to its first semantic event
// (gen_ai.client.operation.time_to_first_chunk).
func (g *GenAIMetrics) FirstChunk(ctx context.Context, a GenAIAttempt, seconds float64) {
	if g == nil {
		return
	}
	a.ErrorType = ""
	g.firstChunk.Record(ctx, seconds, metric.WithAttributeSet(g.set(genAIKey{a: a})))
}

// meterProvider builds the SDK meter provider of the readers with res; nil readers: none.
func meterProvider(readers []sdkmetric.Reader, opts ...sdkmetric.Option) *sdkmetric.MeterProvider {
	for _, r := range readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	return sdkmetric.NewMeterProvider(opts...)
}
