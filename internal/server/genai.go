package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/telemetry"
)

// genaiPeer is what the GenAI semantic conventions name a deployment by: its server.address
// and server.port (from base_url) and its gen_ai.provider.name.
type genaiPeer struct {
	peer     telemetry.Peer
	provider string
}

// genaiPeers maps each catalog deployment's name to its genaiPeer; built once per
// configuration snapshot, read without a lock.
func genaiPeers(cat *catalog.Catalog) map[string]genaiPeer {
	m := make(map[string]genaiPeer, len(cat.Deployments))
	for _, d := range cat.Deployments {
		m[d.Name] = genaiPeer{telemetry.PeerOf(d.BaseURL), telemetry.GenAIProviderName(d.Provider, string(d.Platform))}
	}
	return m
}

// peerOf is the genaiPeer of an attempt's deployment: the catalog's, else (a caller's own
// connection, a deployment removed by a reload) its provider id named as the provider and no
// server address.
func (s *Server) peerOf(a *audit.Attempt) genaiPeer {
	if p, ok := s.peers[a.Deployment]; ok {
		return p
	}
	return genaiPeer{provider: telemetry.GenAIProviderName(a.Provider, a.Platform)}
}

// genaiSeries are the Prometheus GenAI series of one telemetry.GenAIAttempt label set.
type genaiSeries struct {
	input, output, duration, firstChunk prometheus.Observer
}

// genaiMetrics are the GenAI client histograms under the semconv's Prometheus names
// (docs/observability.md "GenAI metrics"), beside the switchyard_* series.
type genaiMetrics struct {
	tokens, duration, firstChunk *prometheus.HistogramVec

	mu     sync.RWMutex
	series map[telemetry.GenAIAttempt]*genaiSeries
}

func newGenAIMetrics(reg *prometheus.Registry) *genaiMetrics {
	base := []string{"gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "server_address", "server_port"}
	g := &genaiMetrics{series: map[telemetry.GenAIAttempt]*genaiSeries{}}
	g.tokens = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: telemetry.PromTokenUsage,
		Help:    "Number of input and output tokens used, per attempt (gen_ai.client.token.usage; input includes cached and cache-write tokens).",
		Buckets: telemetry.TokenBuckets}, append(base[:len(base):len(base)], "gen_ai_token_type"))
	g.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: telemetry.PromOperationDur,
		Help:    "Seconds from an attempt's dispatch to its end (gen_ai.client.operation.duration); error_type is the failure class.",
		Buckets: telemetry.DurationBuckets}, append(base[:len(base):len(base)], "error_type"))
	g.firstChunk = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: telemetry.PromTimeToFirstChunk,
		Help:    "Seconds from a streamed attempt's dispatch to its first semantic event (gen_ai.client.operation.time_to_first_chunk).",
		Buckets: telemetry.FirstChunkBuckets}, base)
	reg.MustRegister(g.tokens, g.duration, g.firstChunk)
	return g
}

func (g *genaiMetrics) get(k telemetry.GenAIAttempt) *genaiSeries {
	g.mu.RLock()
	s := g.series[k]
	g.mu.RUnlock()
	if s != nil {
		return s
	}
	port := ""
	if k.Peer.Address != "" {
		port = strconv.Itoa(k.Peer.Port)
	}
	l := []string{k.Operation, k.Provider, k.Model, k.Peer.Address, port}
	s = &genaiSeries{
		input:      g.tokens.WithLabelValues(append(l[:5:5], "input")...),
		output:     g.tokens.WithLabelValues(append(l[:5:5], "output")...),
		duration:   g.duration.WithLabelValues(append(l[:5:5], k.ErrorType)...),
		firstChunk: g.firstChunk.WithLabelValues(l...),
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if old := g.series[k]; old != nil {
		return old
	}
	g.series[k] = s
	return s
}

// observeGenAI records the GenAI client metrics of each attempt of rec: into the Prometheus
// series (always) and, when otel is non-nil (OTLP on), into the OpenTelemetry instruments.
// end is when the call ended (an attempt without its own end time ended at the next dispatch
// or there). Token usage is recorded only for attempts whose usage is known (observed or
// estimated), the time to first chunk only for streamed attempts that had one. c caches the
// last label set's series (nil: none); it allocates nothing once a label set was seen and OTLP
// is off.
func (s *Server) observeGenAI(rec *audit.Record, end time.Time, c *seriesCache, otel *telemetry.GenAIMetrics) {
	g := s.metrics.genai
	op := operationName(rec.Surface)
	for i := range rec.Attempts {
		a := &rec.Attempts[i]
		p := s.peerOf(a)
		k := telemetry.GenAIAttempt{Operation: op, Provider: p.provider, Model: a.Model, Peer: p.peer, ErrorType: a.ErrorCode}
		gs := c.genai
		if gs == nil || c.gk != k {
			gs = g.get(k)
			c.gk, c.genai = k, gs
		}
		if a.UsageProvenance == audit.ProvenanceObserved || a.UsageProvenance == audit.ProvenanceEstimated {
			in := a.Tokens.Input + a.Tokens.Cached + a.Tokens.CacheWrite
			gs.input.Observe(float64(in))
			gs.output.Observe(float64(a.Tokens.Output))
			otel.Tokens(context.Background(), k, in, a.Tokens.Output)
		}
		if !a.DispatchedAt.IsZero() {
			aend := a.EndedAt
			if aend.IsZero() {
				aend = end
				if i+1 < len(rec.Attempts) {
					aend = rec.Attempts[i+1].DispatchedAt
				}
			}
			if d := aend.Sub(a.DispatchedAt).Seconds(); d >= 0 {
				gs.duration.Observe(d)
				otel.Duration(context.Background(), k, d)
			}
		}
		if a.FirstTokenMS != nil && rec.Stream {
			gs.firstChunk.Observe(*a.FirstTokenMS / 1000)
			otel.FirstChunk(context.Background(), k, *a.FirstTokenMS/1000)
		}
	}
}
