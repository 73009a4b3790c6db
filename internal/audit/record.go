package audit

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned by [Store.Record] and [Recorder.Lookup] when no record has the
// requested id.
var ErrNotFound = errors.New("audit: not found")

// Store is what the [Recorder] needs from a persistent store.
type Store interface {
	// WriteRecords writes recs in one transaction: all or none. A record whose RequestID is
	// already stored replaces the stored one. The store must not retain recs after returning.
	WriteRecords(ctx context.Context, recs []*Record) error
	// Record returns the stored record for requestID, or an error wrapping ErrNotFound.
	Record(ctx context.Context, requestID string) (*Record, error)
}

// Outcomes of an attempt (Attempt.Outcome).
const (
	OutcomeCompleted = "completed" // the attempt served the response
	OutcomeFailed    = "failed"    // failed before commit; the relay may have failed over
	OutcomeTruncated = "truncated" // failed after commit: a terminal in-stream error
	OutcomeCancelled = "cancelled" // the caller went away
)

// Usage provenances (Attempt.UsageProvenance).
const (
	ProvenanceObserved  = "observed"  // counts reported by the provider
	ProvenanceEstimated = "estimated" // counted or estimated by the gateway
	ProvenanceUnknown   = "unknown"   // no counts; Tokens are zero
)

// Tokens are the raw token counts of one attempt in the canonical additive form of
// dialect.Usage: the prompt is Input + Cached + CacheWrite; Reasoning is a subset of Output.
// WebSearchRequests is not tokens: the count of web searches the provider ran and reported,
// billed per call (docs/pricing.md "Server-tool calls"); left out of the JSON when 0.
type Tokens struct {
	Input      int64 `json:"input"`
	Cached     int64 `json:"cached"`
	CacheWrite int64 `json:"cache_write"`
	Output     int64 `json:"output"`
	Reasoning  int64 `json:"reasoning"`
	// WebSearchRequests: see the type's comment.
	WebSearchRequests int64 `json:"web_search_requests,omitempty"`
}

// PriceSnapshot is the price an attempt was billed at, in USD per million tokens, as it was
// when the attempt was dispatched (prices may change later): the rates in force for the
// attempt's usage (its long-context tier's, when one applied), every default resolved
// (contract.md "Additions pinned in round 4").
type PriceSnapshot struct {
	InputPerMTokUSD  float64 `json:"input"`
	OutputPerMTokUSD float64 `json:"output"`
	// PerImageUSD is USD per image returned (the images endpoints); 0 when the price has none.
	PerImageUSD float64 `json:"image,omitempty"`
	// WebSearchUSD is USD per web search the provider ran (docs/pricing.md "Server-tool
	// calls"); 0 when the price has none.
	WebSearchUSD float64 `json:"web_search,omitempty"`
	// CacheReadPerMTokUSD, CacheWritePerMTokUSD and CacheWrite1hPerMTokUSD are the cache
	// prices billed (the input price, or the cache-write price, where the price lists none).
	CacheReadPerMTokUSD    float64 `json:"cache_read"`
	CacheWritePerMTokUSD   float64 `json:"cache_write"`
	CacheWrite1hPerMTokUSD float64 `json:"cache_write_1h"`
	// TierAboveInputTokens is the threshold of the long-context tier applied; 0: the base price.
	TierAboveInputTokens int64 `json:"tier_above_input_tokens,omitempty"`
	// Source is where the price comes from: "config" or "catalog" (the built-in price
	// catalog, or pricing.catalog_file); "" in records written before it was kept.
	Source string `json:"source,omitempty"`
	// CacheWrite1hTokens is the part of Tokens.CacheWrite that were one-hour cache writes.
	CacheWrite1hTokens int64 `json:"cache_write_1h_tokens,omitempty"`
	// Lines break the cost down: each token count times its price (CostLines). Derived from
	// the attempt's tokens and this snapshot; not stored.
	Lines []CostLine `json:"lines,omitempty"`
}

// CostLine is one term of an attempt's cost: Count tokens of Kind ("input" (uncached),
// "cache_read", "cache_write", "cache_write_1h", "output") at PerMTokUSD, or Count calls of
// Kind "web_search" at PerCallUSD (USD per call; PerMTokUSD 0), costing USD (not rounded; the
// attempt's cost_usd is the sum rounded to the micro-USD).
type CostLine struct {
	Kind       string  `json:"kind"`
	Count      int64   `json:"count"`
	PerMTokUSD float64 `json:"usd_per_mtok"`
	PerCallUSD float64 `json:"usd_per_call,omitempty"`
	USD        float64 `json:"usd"`
}

// CostLines is the cost breakdown of tokens at p: one line per non-zero count, in the order
// input, cache_read, cache_write, cache_write_1h, output, web_search; nil for a nil p.
func CostLines(t Tokens, p *PriceSnapshot) []CostLine {
	if p == nil {
		return nil
	}
	w1h := min(max(p.CacheWrite1hTokens, 0), max(t.CacheWrite, 0))
	var out []CostLine
	for _, l := range [...]CostLine{
		{Kind: "input", Count: t.Input, PerMTokUSD: p.InputPerMTokUSD},
		{Kind: "cache_read", Count: t.Cached, PerMTokUSD: p.CacheReadPerMTokUSD},
		{Kind: "cache_write", Count: t.CacheWrite - w1h, PerMTokUSD: p.CacheWritePerMTokUSD},
		{Kind: "cache_write_1h", Count: w1h, PerMTokUSD: p.CacheWrite1hPerMTokUSD},
		{Kind: "output", Count: t.Output, PerMTokUSD: p.OutputPerMTokUSD},
	} {
		if l.Count > 0 {
			l.USD = float64(l.Count) * l.PerMTokUSD / 1e6
			out = append(out, l)
		}
	}
	if n := t.WebSearchRequests; n > 0 {
		out = append(out, CostLine{Kind: "web_search", Count: n, PerCallUSD: p.WebSearchUSD, USD: float64(n) * p.WebSearchUSD})
	}
	return out
}

// Attempt is one physical upstream call (R-AUDIT-2). A route skipped for an open circuit or a
// pause is not an attempt (R-AUDIT-3).
type Attempt struct {
	Attempt       int    `json:"attempt"`        // 1-based, in dispatch order
	Deployment    string `json:"deployment"`     // deployment name
	Provider      string `json:"provider"`       // provider id of the deployment
	Model         string `json:"model"`          // catalog model id the route serves
	UpstreamModel string `json:"upstream_model"` // model id sent to the provider
	Outcome       string `json:"outcome"`        // one of the Outcome* constants
	ErrorCode     string `json:"error_code"`     // canonical failure class; "" on success
	Tokens        Tokens `json:"tokens"`
	// UsageProvenance is one of the Provenance* constants; "" is written as is.
	UsageProvenance string `json:"usage_provenance"`
	// ReservedMaxUSD is the most the attempt could have cost, reserved before dispatch; 0 when
	// nothing was reserved.
	ReservedMaxUSD float64 `json:"reserved_max_usd"`
	CostUSD        float64 `json:"cost_usd"` // billed cost in USD; 0 for an unbilled attempt
	// BillingSource says where the price came from, e.g. "model_price", "route_price",
	// "unpriced".
	BillingSource string `json:"billing_source"`
	// Price is the price snapshot used for billing; nil (JSON null) when unpriced.
	Price *PriceSnapshot `json:"price"`
	// DispatchedAt is when the request was sent upstream; JSON as RFC 3339 with nanoseconds,
	// in UTC.
	DispatchedAt time.Time `json:"dispatched_at"`
	// HeadersMS is milliseconds from dispatch to the upstream response headers; nil (JSON
	// null) when none arrived.
	HeadersMS *float64 `json:"headers_ms"`
	// FirstTokenMS is milliseconds from dispatch to the first semantic output; nil (JSON
	// null) when none arrived.
	FirstTokenMS *float64 `json:"first_token_ms"`
	// DroppedParams names the request fields accepted but not forwarded; JSON always an array
	// ([] when nil or empty).
	DroppedParams []string `json:"dropped_params"`
	// UpstreamStatus is the provider's HTTP status (R-AUDIT-2, issue 11 item 5): 200 for an
	// answer (a stream cut later included), the status of an error answer, 0 when no response
	// came (a missed deadline, a reset, a transport failure, a cancellation before headers).
	// Behind a cloud platform it is the platform's own status (upstream.Call.UpstreamStatus:
	// Bedrock's 503, not the 529 it is classified as).
	UpstreamStatus int `json:"upstream_status"`
	// ErrorOrigin says who the failure of the attempt comes from (ErrorOriginOf, derived from
	// ErrorCode; not stored): "upstream", "gateway", "caller", or "" on success.
	ErrorOrigin string `json:"error_origin"`
	// EndedAt is when the attempt ended: its response relayed to the end, or its failure
	// (the end of its trace span). Not stored; zero when unknown (a record read back).
	EndedAt time.Time `json:"-"`
	// FinishReason is the provider's finish reason of a completed attempt (an OpenAI
	// finish_reason, an Anthropic stop_reason; the canonical stop reason when translated;
	// for a non-stream answer only when the call is traced): the span's
	// gen_ai.response.finish_reasons. Not stored; "" when unknown.
	FinishReason string `json:"-"`
	// The attempt's route context (R-AUDIT-2, issue 11 item 5), as its plan had it: Band is the
	// candidate's 0-based tie band, Score the strategy's metric (null when the route had none),
	// Strategy the strategy that ordered its plan (the requested model's or a fallback's;
	// "balanced" after degrading), Region the route's region ("" when none is configured).
	Band     int    `json:"band"`
	Score    Score  `json:"score"`
	Strategy string `json:"strategy"`
	Region   string `json:"region"`
	// Platform is the service behind the deployment's dialect (contract.md, round 3):
	// "openai", "anthropic", "bedrock", "vertex" or "azure"; "" in records written before it
	// was recorded.
	Platform string `json:"platform"`
}

// The error origins of an attempt (Attempt.ErrorOrigin).
const (
	OriginUpstream = "upstream" // the provider answered an error, broke the connection or the stream
	OriginGateway  = "gateway"  // the gateway ended it: its deadline (upstream_timeout) or gateway_error
	OriginCaller   = "caller"   // the caller: it went away, or its request is at fault (400/404/413 classes)
)

// ErrorOriginOf maps an attempt's error_code (a canonical class) to its origin; "" for "".
func ErrorOriginOf(errorCode string) string {
	switch errorCode {
	case "":
		return ""
	case "cancelled", "invalid_request", "context_overflow", "content_policy", "request_too_large",
		"model_unavailable", "authentication", "permission", "insufficient_credit", "rate_limited":
		return OriginCaller
	case "upstream_timeout", "gateway_error":
		return OriginGateway
	}
	return OriginUpstream
}

// attemptJSON has Attempt's fields and encoding without its MarshalJSON method.
type attemptJSON Attempt

// MarshalJSON encodes a as in R-AUDIT-2: dropped_params is always an array and
// dispatched_at is in UTC.
func (a Attempt) MarshalJSON() ([]byte, error) {
	if a.DroppedParams == nil {
		a.DroppedParams = []string{}
	}
	a.DispatchedAt = a.DispatchedAt.UTC()
	a.ErrorOrigin = ErrorOriginOf(a.ErrorCode)
	return json.Marshal(attemptJSON(a))
}

// Record is the audit record of one request: the body of GET /v1/generation (R-AUDIT-2).
type Record struct {
	RequestID string `json:"request_id"` // the x-request-id sent to the caller
	Model     string `json:"model"`      // the model string as the caller sent it
	Surface   string `json:"surface"`    // openai.chat, openai.responses, anthropic.messages, ...
	// Account is the account of the calling key; "" when authentication is off. GET
	// /v1/generation answers only keys of the same account.
	Account string `json:"account,omitempty"`
	// KeyID is the calling key: a stored key's id, a static key's name; "" when
	// authentication is off. The admin API's call log filters by it.
	KeyID string `json:"key_id,omitempty"`
	// CallerRequestID is the caller's own request id: its x-request-id header, else its
	// X-Client-Request-Id, when 1 to 128 characters of [A-Za-z0-9._:-]; "" when it sent none or
	// a malformed one (docs/observability.md "Caller request ids"). The call log finds a record
	// by it as by RequestID.
	CallerRequestID string `json:"caller_request_id,omitempty"`
	Status          int    `json:"status"`     // HTTP status sent to the caller; 200 for a committed stream
	ErrorCode       string `json:"error_code"` // canonical class of the final outcome; "" on success
	Stream          bool   `json:"stream"`
	// CreatedAt is when the request arrived; JSON as RFC 3339 with nanoseconds, in UTC.
	CreatedAt  time.Time `json:"created_at"`
	DurationMS float64   `json:"duration_ms"` // milliseconds from arrival to the last byte sent
	// AdmissionEvents are the request's admission steps in order (limits checked, reserve
	// taken, refusals, routes dropped for open circuits or paused providers; events.go); JSON
	// always an array, before attempts.
	AdmissionEvents AdmissionEvents `json:"admission_events"`
	// Attempts lists every physical attempt in dispatch order; JSON always an array.
	Attempts []Attempt `json:"attempts"`
}

// recordJSON has Record's fields and encoding without its MarshalJSON method.
type recordJSON Record

// MarshalJSON encodes r as in R-AUDIT-2: attempts is always an array and created_at is in
// UTC.
func (r Record) MarshalJSON() ([]byte, error) {
	if r.Attempts == nil {
		r.Attempts = []Attempt{}
	}
	// Each priced attempt's cost breakdown (PriceSnapshot.Lines), on copies: r shares its
	// attempts and their snapshots with the caller's record.
	copied := false
	for i := range r.Attempts {
		p := r.Attempts[i].Price
		if p == nil || p.Lines != nil {
			continue
		}
		if !copied {
			r.Attempts, copied = append([]Attempt(nil), r.Attempts...), true
		}
		q := *p
		if q.Source == "" {
			// Written before cache prices were kept: every prompt token was billed at input.
			q.CacheReadPerMTokUSD, q.CacheWritePerMTokUSD, q.CacheWrite1hPerMTokUSD = q.InputPerMTokUSD, q.InputPerMTokUSD, q.InputPerMTokUSD
		}
		q.Lines = CostLines(r.Attempts[i].Tokens, &q)
		r.Attempts[i].Price = &q
	}
	r.CreatedAt = r.CreatedAt.UTC()
	return json.Marshal(recordJSON(r))
}

// Clone returns a deep copy of r.
func (r *Record) Clone() *Record {
	c := *r
	if r.Attempts != nil {
		c.Attempts = make([]Attempt, len(r.Attempts))
		for i, a := range r.Attempts {
			if a.Price != nil {
				p := *a.Price
				p.Lines = append([]CostLine(nil), p.Lines...)
				a.Price = &p
			}
			if a.HeadersMS != nil {
				v := *a.HeadersMS
				a.HeadersMS = &v
			}
			if a.FirstTokenMS != nil {
				v := *a.FirstTokenMS
				a.FirstTokenMS = &v
			}
			if a.DroppedParams != nil {
				a.DroppedParams = append([]string{}, a.DroppedParams...)
			}
			c.Attempts[i] = a
		}
	}
	return &c
}
