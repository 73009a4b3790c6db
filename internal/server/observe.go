package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/relay"
	"github.com/switchyard-gw/switchyard/internal/telemetry"
)

// callObs is what a model call's observations need beyond its audit record: the metrics, the
// access log and the trace (docs/observability.md). It lives in the pooled callState.
type callObs struct {
	model   string     // the catalog model id the caller's model string resolved to; "" if none
	keyID   string     // the calling key's id in the ledger; "" when anonymous
	refused string     // the limit kind of a refusal by a caller limit; "" otherwise
	gaps    relay.Gaps // the committed stream's inter-token gaps
	// callerRID is the caller's own x-request-id when well-formed (callerRequestID), logged
	// and traced beside the gateway's request id; "" otherwise.
	callerRID string
	tr        traceState // the trace of the call (trace.go); tr.span nil when not traced
	// series are the metric series the pooled state's last call counted into (metrics.go).
	series seriesCache
}

// reset clears o for a new call, keeping the trace's scratch and the series cache.
func (o *callObs) reset() {
	sends, series := o.tr.sends[:0], o.series
	*o = callObs{}
	o.tr.sends, o.series = sends, series
}

// initLog sets the access logger and the operational log function from the options: a
// Logger when given, else the access lines go to Logf; the operational events go to Logf when
// given, else to the Logger at warn.
func (s *Server) initLog(o Options) {
	s.log = o.Logger
	switch {
	case s.log == nil && o.Logf != nil:
		s.log = slog.New(telemetry.NewLogfHandler(o.Logf, slog.LevelInfo))
	case s.log == nil:
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.logf == nil {
		lg := s.log
		s.logf = func(format string, args ...any) { lg.Warn(fmt.Sprintf(format, args...)) }
	}
}

// finish completes the record, observes it (metrics, access log), and queues it for the store
// off the request path.
func (s *Server) finish(rec *audit.Record, start time.Time, ob *callObs) {
	end := time.Now()
	rec.DurationMS = float64(end.Sub(start).Microseconds()) / 1000
	if ob.tr.span != nil {
		s.endTrace(rec, ob, end)
	}
	if !s.opts.MetricsOff {
		s.metrics.observe(rec, ob.model, &ob.gaps, &ob.series)
		var otel *telemetry.GenAIMetrics
		if s.tracing != nil {
			otel = s.tracing.GenAI
		}
		s.observeGenAI(rec, end, &ob.series, otel)
		if ob.refused != "" && ob.refused != "health" && ob.refused != LimitKindInflightBody { // not caller limits
			s.metrics.refused(ob.refused)
		}
	}
	s.accessLog(rec, ob)
	s.rec.Record(rec)
}

// maxLoggedModel caps the caller's model string in the access log.
const maxLoggedModel = 200

// accessLog writes the request's one access line (docs/observability.md "Logs"): at info, or
// at warn when the gateway or a provider failed it (status 5xx). It names the request, the
// caller's account and key id, the model, the outcome, the attempts and the usage; never a
// credential, prompt or completion text, or a provider's error body.
func (s *Server) accessLog(rec *audit.Record, ob *callObs) {
	level := slog.LevelInfo
	if rec.Status >= 500 {
		level = slog.LevelWarn
	}
	ctx := context.Background()
	if !s.log.Enabled(ctx, level) {
		return
	}
	model := rec.Model
	if len(model) > maxLoggedModel {
		model = model[:maxLoggedModel]
	}
	var tk audit.Tokens
	var cost float64
	var dep, prov string
	var failed []string
	for i := range rec.Attempts {
		a := &rec.Attempts[i]
		tk.Input += a.Tokens.Input
		tk.Cached += a.Tokens.Cached
		tk.CacheWrite += a.Tokens.CacheWrite
		tk.Output += a.Tokens.Output
		tk.Reasoning += a.Tokens.Reasoning
		cost += a.CostUSD
		dep, prov = a.Deployment, a.Provider
		if a.Outcome == audit.OutcomeFailed && i < len(rec.Attempts)-1 {
			failed = append(failed, a.Deployment+":"+a.ErrorCode)
		}
	}
	attrs := [...]slog.Attr{
		slog.String("request_id", rec.RequestID),
		slog.String("caller_request_id", ob.callerRID),
		slog.String("surface", rec.Surface),
		slog.String("account", rec.Account),
		slog.String("key_id", ob.keyID),
		slog.String("model", model),
		slog.String("catalog_model", ob.model),
		slog.Bool("stream", rec.Stream),
		slog.Int("status", rec.Status),
		slog.String("class", rec.ErrorCode),
		slog.Int("attempts", len(rec.Attempts)),
		slog.String("deployment", dep),
		slog.String("provider", prov),
		slog.String("failed_over", strings.Join(failed, ",")),
		slog.Float64("duration_ms", rec.DurationMS),
		slog.Int64("input_tokens", tk.Input+tk.Cached+tk.CacheWrite),
		slog.Int64("cached_tokens", tk.Cached),
		slog.Int64("output_tokens", tk.Output),
		slog.Int64("reasoning_tokens", tk.Reasoning),
		slog.Float64("cost_usd", cost),
	}
	s.log.LogAttrs(ctx, level, "request", attrs[:]...)
}

// maxCallerRequestID is the longest caller request id kept, in bytes.
const maxCallerRequestID = 128

// callerRequestIDHeaders are the headers a caller names its own request id in, in the order
// they are read: x-request-id (what users and most proxies send), then X-Client-Request-Id
// (the header OpenAI's API takes a client's own id in).
var callerRequestIDHeaders = [...]string{"X-Request-Id", "X-Client-Request-Id"}

// callerRequestID returns the caller's own request id: the first of callerRequestIDHeaders it
// sent exactly once, when that value is well-formed: 1 to 128 characters of [A-Za-z0-9._:-];
// "" otherwise (absent, repeated, too long, or holding anything else, which is then ignored
// rather than logged or stored). The gateway's own id stays the request id (the x-request-id
// answered, the audit key, GET /v1/generation's id); the caller's is recorded beside it as
// caller_request_id in the access log, the trace and the audit record (the call log searches
// it).
func callerRequestID(r *http.Request) string {
	for _, h := range callerRequestIDHeaders {
		v := r.Header[h]
		if len(v) == 0 {
			continue
		}
		if len(v) != 1 || len(v[0]) == 0 || len(v[0]) > maxCallerRequestID {
			return ""
		}
		for i := 0; i < len(v[0]); i++ {
			c := v[0][i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
				return ""
			}
		}
		return v[0]
	}
	return ""
}
