// Package relay runs one model call over its plan: the attempt loop, the commit gate, failover
// and the terminal in-stream error (R-FAIL-1..7, 9, 11). Before commit nothing reaches the
// caller: lifecycle frames are held, a failover-eligible failure moves to the next candidate at
// once. The first semantic output commits the attempt: headers and held frames are written, and
// from then on the request never switches; a later failure is one terminal error event in the
// caller's dialect. Every physical call is an audit.Attempt.
package relay

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/sse"
	"github.com/switchyard-gw/switchyard/internal/stats"
	"github.com/switchyard-gw/switchyard/internal/upstream"
)

// maxErrorBody caps how much of an upstream error body is read for classification.
const maxErrorBody = 64 << 10

// maxResponseBody caps a non-stream upstream response (64 MiB); larger is an upstream_error.
const maxResponseBody = 64 << 20

// MaxHeldBytes caps the lifecycle frames held before commit (64 KiB): a provider that sends
// more before any semantic output (pings, unknown events) is an upstream_error, which fails
// over (docs/behaviour.md).
const MaxHeldBytes = 64 << 10

// Request is one model call as the relay sees it. Body is the caller's body, read once.
type Request struct {
	ID string
	// Surface is the caller's dialect; Codec is its codec; Protocol what the call asks for.
	Surface       catalog.Dialect
	Protocol      catalog.Protocol
	Codec         Codec
	Body          []byte
	Info          dialect.RequestInfo
	Resolution    catalog.Resolution
	AnthropicBeta string // the caller's anthropic-beta header, forwarded on Anthropic routes
	// InputTokens is the gateway's estimate of the request's input tokens, used for the usage of
	// a stream that ends (cut, cancelled) before its provider reported any (R-BILL-2); 0: unknown.
	InputTokens int
	// Fallbacks are the plans of the request's fallback models (R-FAIL-8), tried in order after
	// every candidate of the main plan. nil: none.
	Fallbacks []Fallback
	// AttemptLimit caps the physical attempts of the request over all plans (R-FAIL-10); 0 is
	// unlimited.
	AttemptLimit int
	// GatewayProvider is the gateway's own name (config server.name), the provider that a
	// closed dedicated endpoint shows in x-switchyard-provider and provider_metadata (issue 11
	// item 7, metadata.go); nil: the deployment's provider always.
	GatewayProvider []string
	// ContentType is the Content-Type of Body sent upstream; nil is application/json (the image
	// edits' multipart/form-data body carries its boundary here; AppendUpstreamBody keeps it).
	ContentType []string
	// CapOutput holds a metered request (one that reserves money, R-BILL-1) to its reserve's
	// output basis: when the caller set no output cap, each attempt's upstream request carries
	// the basis of its model (admission.OutputTokens: the model's max_output_tokens, else 4096)
	// as max_completion_tokens on an OpenAI deployment (an Anthropic request always carries
	// max_tokens, defaulted to the same basis), so that the provider cannot bill more output
	// than was reserved (docs/limits.md).
	CapOutput bool
	// FinishReasons records each completed non-stream attempt's finish reason in
	// audit.Attempt.FinishReason (one more lookup in the response body; streams record it as
	// they scan): set when the call is traced.
	FinishReasons bool
	// Events, when set, receives an admission event for each candidate a circuit or a provider
	// pause skips at its turn (audit.StageDispatch; not an attempt, R-AUDIT-3).
	Events *audit.AdmissionEvents
	// Debug says the request asked for its routing debug (extra.debug routing, issue 11 item 4;
	// debug.go): a "debug" member in a non-stream body or an error body, a final SSE comment on
	// a stream.
	Debug bool
	// ReservedMaxUSD is the request's reserve in USD, recorded on each attempt as
	// reserved_max_usd (R-AUDIT-2).
	ReservedMaxUSD float64
	// Gate, when set, is called once before the commit (the first byte to the caller): the
	// request's ledger reserve is made durable there, while the upstream call ran beside its
	// group commit (billing.Reservation.Secure; issue 24 item 1). An error refuses the commit:
	// the attempt fails with it (a gateway_error: no failover, no circuit count) and nothing
	// of the response reaches the caller.
	Gate Gate
	// plan is Run's plan, for the debug member.
	plan *plan.Plan
}

// Gate is a request's commit gate (Request.Gate): *billing.Reservation.
type Gate interface {
	// Secure returns nil when the request may commit.
	Secure(ctx context.Context) error
}

// Fallback is one fallback model of a request: its resolution (upstream ids, billing price,
// output cap; Requested is the id echoed when it serves) and its plan.
type Fallback struct {
	Resolution catalog.Resolution
	Plan       *plan.Plan
}

// Result is what happened: the final status and class, the attempts for the audit, and the
// usage of the committed attempt.
type Result struct {
	Status    int           // HTTP status sent to the caller (200 for a committed stream)
	Class     failure.Class // the final failure class; "" on success
	Committed bool          // some output reached the caller
	Attempts  []audit.Attempt
	Usage     dialect.Usage
	// UsageSeen says whether the committed attempt's provider reported usage.
	UsageSeen bool
	// Gaps are the committed stream's inter-token gaps (zero for a non-stream response).
	Gaps Gaps
}

// Relay runs attempts against the deployments' clients, guarded by the circuits.
type Relay struct {
	circuits *circuit.Set
	clients  map[string]*upstream.Client // by deployment name; read-only after New
	headers  map[string]depHeaders       // by deployment name; read-only after New
	// extra are the clients added after New (BYOK connections, AddClient): *extraClient by
	// deployment name, consulted only when clients has no entry.
	extra sync.Map
	pool  sync.Pool // *scratch
	// Stats, when set, receives one observation per attempt (latency, throughput and
	// reliability windows, R-ORDER-4); Record must not block.
	Stats interface{ Record(stats.Observation) }
	// Logf, when set, receives one line per failed attempt: request id, deployment, class and
	// the failure's cause (status and provider error type/code, never provider text).
	Logf func(format string, args ...any)
}

// depHeaders are a deployment's response header values, built once: net/http only reads them.
type depHeaders struct{ name, provider []string }

// attemptCounts are the x-switchyard-attempts values for small counts, built once.
var attemptCounts = func() (v [16][]string) {
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

func attemptsValue(n int) []string {
	if n >= 0 && n < len(attemptCounts) {
		return attemptCounts[n]
	}
	return []string{strconv.Itoa(n)}
}

var (
	jsonValue        = []string{"application/json"}
	eventStreamValue = []string{"text/event-stream"}
	noCacheValue     = []string{"no-cache"}
	noValue          = []string{"no"}
)

// New returns a relay. clients maps deployment names to their upstream clients.
func New(circuits *circuit.Set, clients map[string]*upstream.Client) *Relay {
	rl := &Relay{circuits: circuits, clients: clients, headers: make(map[string]depHeaders, len(clients))}
	for name, c := range clients {
		rl.headers[name] = depHeaders{name: []string{name}, provider: []string{c.Deployment().Provider}}
	}
	rl.pool.New = func() any { return &scratch{rd: sse.NewReader(nil)} }
	return rl
}

// extraClient is a client added with AddClient, with its response header values.
type extraClient struct {
	c *upstream.Client
	h depHeaders
}

// AddClient makes c the client of its deployment (c.Deployment().Name) for attempts on routes of
// that deployment: the caller's own connections (BYOK), which appear after New. A deployment
// given to New keeps its client; adding a name again replaces the earlier added client. Safe
// for concurrent use with Run.
func (rl *Relay) AddClient(c *upstream.Client) {
	d := c.Deployment()
	if _, ok := rl.clients[d.Name]; ok {
		return
	}
	rl.extra.Store(d.Name, &extraClient{c: c, h: depHeaders{name: []string{d.Name}, provider: []string{d.Provider}}})
}

// RemoveClient forgets the client added under deployment name (a revoked BYOK connection): an
// attempt planned before the removal then fails over as a deployment without a client. Clients
// given to New are never removed. Safe for concurrent use with Run.
func (rl *Relay) RemoveClient(name string) { rl.extra.Delete(name) }

// client returns the deployment's client and header values, or nil.
func (rl *Relay) client(name string) (*upstream.Client, depHeaders) {
	if c := rl.clients[name]; c != nil {
		return c, rl.headers[name]
	}
	if v, ok := rl.extra.Load(name); ok {
		e := v.(*extraClient)
		return e.c, e.h
	}
	return nil, depHeaders{}
}

// scratch is the per-request working memory, pooled: no buffer is allocated per frame.
type scratch struct {
	body []byte // the upstream request body of the current attempt
	resp []byte // a non-stream response or an error body as read
	out  []byte // frames to write
	hold []byte // lifecycle frames held before commit
	st   dialect.StreamState
	rd   *sse.Reader
	tr   translation // cross-dialect state
}

// maxPooledBuffer is the largest buffer a pooled scratch keeps (1 MiB): a request that needed
// more (a large body, a big non-stream response) lets its buffer go instead of pinning it in
// the pool for ever.
const maxPooledBuffer = 1 << 20

// maxKeptHold is the largest hold buffer a stream keeps past its commit (4 KiB): the lifecycle
// frames held before commit are written then, and a stream holds its scratch until it ends.
const maxKeptHold = 4 << 10

// putScratch returns sc to the pool, without any buffer larger than maxPooledBuffer.
func (rl *Relay) putScratch(sc *scratch) {
	for _, b := range [...]*[]byte{&sc.body, &sc.resp, &sc.out, &sc.hold, &sc.st.Scratch} {
		if cap(*b) > maxPooledBuffer {
			*b = nil
		}
	}
	if sc.rd.BufferCap() > maxPooledBuffer {
		sc.rd = sse.NewReader(nil)
	}
	rl.pool.Put(sc)
}

// attemptRun is the state of one attempt, kept out of parameter lists.
type attemptRun struct {
	req  *Request
	w    http.ResponseWriter
	rc   *http.ResponseController
	cand *plan.Candidate
	a    *audit.Attempt
	// price is the attempt's billing price (priceOf); nil when unpriced or BYOK. Its snapshot
	// at the base rates is a.Price until the usage is known (finishUsage).
	price   *catalog.Price
	total   int // attempts so far, this one included
	sc      *scratch
	res     *Result
	upName  string
	headers depHeaders
	// frames counts the semantic frames written to the caller: the output-token estimate of a
	// stream that ends without a usage report (one token per delta).
	frames int
	// estimated says a committed non-stream answer had no usage report: its usage is the
	// estimate of complete.
	estimated bool
	// images is the number of images a committed images answer returned (its data array),
	// billed at the price's PerImageUSD.
	images int64
	// up is the deployment's dialect codec; cross says it differs from the caller's.
	up    Codec
	cross bool
	// pass says a Responses request passes through to a deployment serving the Responses API.
	pass bool
	// model is the resolution of the candidate's model (the request's or a fallback's); echo is
	// the model id echoed to the caller and in x-switchyard-model.
	model *catalog.Resolution
	echo  string
}
