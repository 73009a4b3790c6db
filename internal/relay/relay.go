// Package relay runs one model call over its plan: the attempt loop, the commit gate, failover
// and the terminal in-stream error (R-FAIL-1..7, 9, 11). Before commit nothing reaches the
// caller: lifecycle frames are held, a failover-eligible failure moves to the next candidate at
// once. The first semantic output commits the attempt: headers and held frames are written, and
// from then on the request never switches; a later failure is one terminal error event in the
// caller's dialect. Every physical call is an audit.Attempt.
package relay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/sse"
	"github.com/switchyard-gw/switchyard/internal/stats"
	"github.com/switchyard-gw/switchyard/internal/upstream"
	"github.com/tidwall/gjson"
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

// Run tries the plan's candidates in order, then the candidates of each of req.Fallbacks in
// order (R-FAIL-8), and writes the caller's response to w (R-FAIL-1). A failure that does not
// fail over (caller fault, R-FAIL-6) stops the whole chain; req.AttemptLimit, when positive,
// caps the physical attempts over all plans (R-FAIL-10). It returns when the response is
// complete, the caller went away, or no candidate is left.
//
// Run is panic-safe: a panic while an attempt runs is recovered, the attempt's circuit ticket
// is reported (neutral: the gateway failed, not the deployment; a half-open probe slot is
// freed), and the caller gets a typed 503 gateway_error before commit, or the terminal error
// event of its dialect after (the committed attempt is billed for its output so far). A
// request whose context ends with failure.ErrShutdown (the shutdown grace ran out) before
// commit is answered 503 gateway_error, never left empty.
func (rl *Relay) Run(ctx context.Context, w http.ResponseWriter, req *Request, p *plan.Plan) (res Result) {
	sc := rl.pool.Get().(*scratch)
	var held circuit.Ticket // the running attempt's ticket, until it is reported
	var run attemptRun
	defer func() {
		if v := recover(); v != nil {
			rl.recovered(v, &res, held, &run, w, req)
			return // sc may be inconsistent: it is not pooled again
		}
		rl.putScratch(sc)
	}()
	rc := http.NewResponseController(w)
	sc.tr.reset()
	req.plan = p

	var last, firstRejection error
	var minRetryAfter time.Duration
chain:
	for si := 0; si <= len(req.Fallbacks); si++ {
		mres, mp, echo := &req.Resolution, p, req.Info.Model
		if si > 0 {
			fb := &req.Fallbacks[si-1]
			mres, mp, echo = &fb.Resolution, fb.Plan, fb.Resolution.Requested
		}
		maxOut := int64(mres.Model.MaxOutputTokens)
		var capOut int64 // the output cap a metered request sends when its caller set none
		if req.CapOutput && req.Protocol == catalog.ProtocolModel && req.Info.MaxTokens == 0 {
			capOut = admission.OutputTokens(0, maxOut)
		}
		before := len(res.Attempts)
		for i := range mp.Candidates {
			if req.AttemptLimit > 0 && len(res.Attempts) >= req.AttemptLimit {
				break chain
			}
			if mp.AttemptLimit > 0 && len(res.Attempts)-before >= mp.AttemptLimit {
				break // the plan's own cap (provider.allow_fallbacks false)
			}
			c := &mp.Candidates[i]
			dep := c.Route.Deployment
			up := CodecFor(dep.Dialect)
			// A Responses request reaches a deployment that serves the Responses API as it came
			// (pass-through, responses_passthrough.go); every other deployment translates it.
			pass := req.Surface == catalog.Responses && rl.passesResponses(dep)
			cross := dep.Dialect != req.Surface && !pass
			upName := mres.UpstreamModel(c.Route)
			// The body comes first: a request that cannot be carried to this dialect skips the
			// candidate before any circuit or attempt is spent on it.
			var dropped []string
			if cross {
				var err error
				sc.body, dropped, err = sc.tr.appendBody(sc.body[:0], req, up, upName, maxOut, capOut, mres.Model.Reasoning)
				if err != nil {
					if firstRejection == nil {
						firstRejection = err
					}
					continue
				}
			} else if pass {
				sc.body = appendResponsesBody(sc.body[:0], req, upName, capOut)
			} else if capOut > 0 && dep.Dialect != catalog.Anthropic && !hasOutputCap(req.Body) {
				sc.out = req.Codec.AppendUpstreamBody(sc.out[:0], req.Body, &req.Info, upName)
				sc.body = appendOutputCap(sc.body[:0], sc.out, capOut)
			} else {
				sc.body = req.Codec.AppendUpstreamBody(sc.body[:0], req.Body, &req.Info, upName)
			}
			tk, err := rl.circuits.Admit(dep.PauseScope(), dep.Name, c.Route.Model)
			if err != nil { // not an attempt (R-AUDIT-3)
				if e, ok := RouteEvent(err, audit.StageDispatch, dep.Name, c.Route.Model); ok && req.Events != nil {
					req.Events.Add(e)
				}
				if firstRejection == nil {
					firstRejection = plan.CoolingDown()
				}
				continue
			}
			if ctx.Err() != nil {
				tk.Done(context.Canceled)
				return rl.ended(ctx, w, req, &res)
			}
			held = tk
			res.Attempts = append(res.Attempts, audit.Attempt{
				Attempt: len(res.Attempts) + 1, Deployment: dep.Name, Provider: dep.Provider, Platform: string(dep.Platform),
				Model: c.Route.Model, UpstreamModel: upName, DroppedParams: dropped,
				UsageProvenance: audit.ProvenanceUnknown, DispatchedAt: time.Now(), ReservedMaxUSD: req.ReservedMaxUSD,
			})
			a := &res.Attempts[len(res.Attempts)-1]
			price, source := priceOf(mres.Model, c.Route)
			a.Price, a.BillingSource = snapshotOf(price, price.Rates(0)), source
			routeContext(a, c, mp)
			run = attemptRun{req: req, w: w, rc: rc, cand: c, a: &res.Attempts[len(res.Attempts)-1], price: price,
				total: len(res.Attempts), sc: sc, res: &res, up: up, cross: cross, pass: pass, model: mres, echo: echo}
			err = rl.attempt(ctx, &run)
			run.a.EndedAt = time.Now()
			rl.observe(run.a, err)
			fe := failure.From(err)
			if fe != nil && fe.Class == failure.UpstreamRateLimited && fe.RetryAfter > 0 &&
				(minRetryAfter == 0 || fe.RetryAfter < minRetryAfter) {
				minRetryAfter = fe.RetryAfter
			}
			held = circuit.Ticket{}
			if res.Committed || fe == nil {
				tk.Done(err) // success, or a failure after commit (counted when failover-eligible, R-FAIL-4)
				if req.Debug && req.Info.Stream && res.Committed && res.Class != failure.Cancelled {
					writeDebugComment(w, req, &res)
				}
				return res
			}
			tk.Done(fe)
			run.a.Outcome, run.a.ErrorCode = audit.OutcomeFailed, string(fe.Class)
			if rl.Logf != nil && fe.Class != failure.Cancelled {
				rl.Logf("request %s attempt %d deployment %s failed: %v", req.ID, run.a.Attempt, dep.Name, fe)
			}
			if fe.Class == failure.Cancelled || (ctx.Err() != nil && fe.Class != failure.GatewayError) {
				run.a.Outcome = audit.OutcomeCancelled
				return rl.ended(ctx, w, req, &res)
			}
			last = fe
			if !fe.Class.FailsOver() { // R-FAIL-6: returned directly; R-FAIL-8: ends the chain
				break chain
			}
			mp.Failover(i+1, c.Route, fe.Class) // inside or across regions by class (docs/routing.md)
		}
	}
	// R-FAIL-9: the last failure when a call was made, else the first rejection.
	final := last
	if final == nil {
		final = firstRejection
	}
	if final == nil {
		final = p.Refusal()
	}
	fe := failure.From(final)
	if fe.Class == failure.UpstreamRateLimited && minRetryAfter > 0 {
		cp := *fe
		cp.RetryAfter = minRetryAfter
		fe = &cp
	} else if fe.Class == failure.UpstreamError && fe.UpstreamStatus == http.StatusServiceUnavailable && fe.Status == 0 {
		// The provider said it is unavailable: the caller gets its 503 and its retry-after
		// (docs/errors.md "Upstream 529 and 503"), still upstream_error.
		cp := *fe
		cp.Status = http.StatusServiceUnavailable
		fe = &cp
	}
	res.Status, res.Class = fe.HTTPStatus(), fe.Class
	req.writeError(w, fe, &res, sc.out[:0])
	return res
}

func (rl *Relay) cancelled(res *Result) Result {
	res.Status, res.Class = failure.StatusClientClosedRequest, failure.Cancelled
	return *res
}

// errShuttingDown answers a request that the shutdown grace ended before commit.
// It carries retry-after 1 s (x-should-retry true): another replica, or this one restarted,
// serves the retry.
var errShuttingDown = &failure.Error{Class: failure.GatewayError, RetryAfter: time.Second, Msg: "the gateway is shutting down; retry the request"}

// ended ends a request whose context ended before commit: the caller went away (cancelled,
// nothing to write), or the gateway is shutting down (failure.ErrShutdown): the caller is
// still there and gets a 503 gateway_error, never an empty response.
func (rl *Relay) ended(ctx context.Context, w http.ResponseWriter, req *Request, res *Result) Result {
	if !errors.Is(context.Cause(ctx), failure.ErrShutdown) {
		return rl.cancelled(res)
	}
	res.Status, res.Class = errShuttingDown.Class.Status(), errShuttingDown.Class
	WriteError(w, req.Codec, req.ID, errShuttingDown, len(res.Attempts), nil)
	return *res
}

// errPanic is the failure of an attempt during which the gateway panicked.
var errPanic = &failure.Error{Class: failure.GatewayError, Msg: "the gateway failed while serving this request (internal error)"}

// recovered ends a request during which the relay panicked with v: the held circuit ticket is
// reported neutral (a half-open probe slot is freed, nothing counts against the deployment);
// an attempt still running is recorded failed (before commit) or truncated and billed for its
// output so far (after commit); the caller gets a 503 gateway_error before commit, the terminal
// error event of its dialect when the stream was running, and nothing more when its response
// was already complete.
func (rl *Relay) recovered(v any, res *Result, held circuit.Ticket, run *attemptRun, w http.ResponseWriter, req *Request) {
	held.Done(errPanic)
	if rl.Logf != nil {
		rl.Logf("request %s: panic in the relay: %v\n%s", req.ID, v, debug.Stack())
	}
	var a *audit.Attempt
	if n := len(res.Attempts); n > 0 && res.Attempts[n-1].Outcome == "" {
		a = &res.Attempts[n-1]
	}
	if !res.Committed {
		if a != nil {
			a.Outcome, a.ErrorCode = audit.OutcomeFailed, string(failure.GatewayError)
		}
		res.Status, res.Class = errPanic.Class.Status(), errPanic.Class
		WriteError(w, req.Codec, req.ID, errPanic, len(res.Attempts), nil)
		return
	}
	if a == nil || run.a != a {
		return // the response was complete: nothing may follow it
	}
	if run.sc != nil {
		run.finishUsage(run.sc.st.Usage, run.sc.st.UsageSeen)
		res.UsageSeen = run.sc.st.UsageSeen
	}
	a.Outcome, a.ErrorCode = audit.OutcomeTruncated, string(failure.GatewayError)
	res.Class = failure.UpstreamTruncated
	if !req.Info.Stream {
		return
	}
	term := &failure.Error{Class: failure.UpstreamTruncated, Msg: "the gateway failed after the response started (internal error); the response is incomplete"}
	if _, err := w.Write(req.Codec.AppendStreamError(nil, term, req.ID)); err == nil {
		_ = http.NewResponseController(w).Flush()
	}
}

// attempt performs one physical call. It returns nil when the response completed, or the
// failure; res.Committed says whether it came after commit.
func (rl *Relay) attempt(ctx context.Context, r *attemptRun) error {
	dep := r.cand.Route.Deployment
	client, headers := rl.client(dep.Name)
	if client == nil {
		return failure.Newf(failure.UpstreamError, "deployment %q has no client", dep.Name)
	}
	r.upName = r.a.UpstreamModel
	r.headers = headers
	stream := r.req.Info.Stream
	op := r.req.Protocol
	if r.pass {
		op = upstream.OpResponses
	}
	call, err := client.SendTyped(ctx, op, r.sc.body, r.req.ContentType, stream, r.req.AnthropicBeta)
	if err != nil {
		return err
	}
	defer call.Close()
	ms := msSince(r.a.DispatchedAt, call.HeadersAt)
	r.a.HeadersMS = &ms
	r.a.UpstreamStatus = call.Status
	if call.Status < 200 || call.Status > 299 {
		b, _ := readLimited(r.sc.resp[:0], call.Body, maxErrorBody)
		r.sc.resp = b
		err := r.up.NormalizeError(call.Status, call.Header.Get, b)
		if fe := failure.From(err); dep.BYOK && fe.Class == failure.UpstreamAuth {
			// The caller's own credential, not the gateway's: say so (never the credential).
			cp := *fe
			cp.Msg = "the provider rejected the credentials of your own connection " + dep.Name + "; check its api_key"
			err = &cp
		}
		if fe := failure.From(err); call.Status == http.StatusNotFound && fe.Class == failure.UpstreamError && r.model.SnapshotSuffix != "" {
			// The provider does not know the dated snapshot the caller named: the caller's
			// model string is at fault, not the deployment (no failover, no circuit).
			return &failure.Error{Class: failure.ModelUnavailable, Param: "model", UpstreamStatus: call.Status, Cause: err,
				Msg: "the dated snapshot " + strconv.Quote(r.echo) + " is not served by the provider; GET /v1/models lists the available models"}
		}
		return err
	}
	if !stream {
		return rl.complete(ctx, r, call)
	}
	ct, _, _ := mime.ParseMediaType(call.Header.Get("Content-Type"))
	if ct != "text/event-stream" {
		return &failure.Error{Class: failure.UpstreamError, Msg: "the provider did not answer with a stream", UpstreamStatus: call.Status}
	}
	return rl.pump(ctx, r, call)
}

// hasOutputCap reports whether an OpenAI chat body sets an output cap itself (a 0 included).
func hasOutputCap(body []byte) bool {
	return dialect.Get(body, "max_completion_tokens").Exists() || dialect.Get(body, "max_tokens").Exists()
}

// appendOutputCap appends the JSON object body with "max_completion_tokens": n as its first
// member; every other byte is body's.
func appendOutputCap(dst, body []byte, n int64) []byte {
	open := bytes.IndexByte(body, '{')
	if open < 0 {
		return append(dst, body...)
	}
	dst = append(dst, body[:open+1]...)
	dst = append(dst, `"max_completion_tokens":`...)
	dst = strconv.AppendInt(dst, n, 10)
	dst = append(dst, ',')
	return append(dst, body[open+1:]...)
}

// complete reads a non-stream response whole, then commits it.
func (rl *Relay) complete(ctx context.Context, r *attemptRun, call *upstream.Call) error {
	b, err := readLimited(r.sc.resp[:0], call.Body, maxResponseBody)
	r.sc.resp = b
	if err != nil {
		return call.Err(ctx, err)
	}
	var out []byte
	var usage dialect.Usage
	var seen bool
	if r.cross {
		out, usage, seen, err = r.sc.tr.rewriteResponse(r.sc.out[:0], b, r.up, r.req.Codec, r.echo, r.req.ID)
		if r.req.FinishReasons {
			r.a.FinishReason = dialect.InternFinishReason(string(r.sc.tr.stop))
		}
	} else {
		out, usage, seen, err = r.req.Codec.RewriteResponse(r.sc.out[:0], b, r.echo)
		out = validUTF8(out) // relayed undecoded: no invalid byte reaches the caller (utf8.go)
		if r.req.FinishReasons && err == nil {
			r.a.FinishReason = responseFinishReason(r.up, b)
			if r.pass {
				r.a.FinishReason = dialect.InternFinishReason(gjson.GetBytes(b, "status").Str)
			}
		}
	}
	if err == nil {
		out = r.appendProviderMetadata(out) // served-by in the body (metadata.go)
	}
	r.sc.out = out
	if err != nil {
		return err
	}
	images := r.req.Protocol == catalog.ProtocolImages || r.req.Protocol == catalog.ProtocolImageEdits
	if images {
		r.images = max(dialect.Get(b, "data.#").Int(), 0)
	}
	if !seen {
		// No usage report (R-BILL-2): input from the request estimate, output from the answer's
		// text by the same bytes/4 estimate (none for images: they bill per image, PerImageUSD),
		// marked estimated; never billed 0.
		usage = dialect.Usage{Input: int64(r.req.InputTokens)}
		if !images {
			usage.Output = estimateOutput(r.up, b)
		}
		r.estimated = true
	}
	if err := r.gate(ctx); err != nil {
		return err
	}
	ms := msSince(r.a.DispatchedAt, time.Now())
	r.a.FirstTokenMS = &ms
	r.commit(false)
	r.res.Usage, r.res.UsageSeen = usage, seen
	r.finishUsage(usage, seen)
	r.a.Outcome = audit.OutcomeCompleted
	r.res.Status = http.StatusOK
	if r.req.Debug {
		out = AppendMember(out, "debug", r.req.debugOf(r.res)) // the attempt is complete and billed
		r.sc.out = out
	}
	if _, err := r.w.Write(out); err != nil {
		r.a.Outcome = audit.OutcomeCancelled
		r.res.Class = failure.Cancelled
	}
	return nil
}

// estimateOutput is the output-token estimate of a non-stream answer body of the codec's
// dialect without a usage report: the bytes of its text, reasoning, refusal and tool-call
// arguments divided by 4 (the gateway's input estimate uses the same ratio), at least 1 when
// the answer has any.
func estimateOutput(up Codec, body []byte) int64 {
	resp, err := up.DecodeResponse(body)
	if err != nil || resp == nil {
		return 0
	}
	n := 0
	for i := range resp.Parts {
		p := &resp.Parts[i]
		n += len(p.Text) + len(p.Arguments) + len(p.ToolName)
	}
	if n == 0 {
		return 0
	}
	return int64(max((n+3)/4, 1))
}

// pump reads the upstream stream. Before commit it holds lifecycle frames and fails over on any
// failure; the first semantic frame commits; after commit a failure becomes one terminal error
// event (R-FAIL-2..4).
func (rl *Relay) pump(ctx context.Context, r *attemptRun, call *upstream.Call) error {
	sc := r.sc
	sc.st.Reset(r.echo, r.req.Info.IncludeUsage)
	sc.hold = sc.hold[:0]
	sc.rd.Reset(call.Body)
	codec := r.req.Codec
	if r.cross {
		r.up.resetDecoder(&sc.tr)
		codec.resetEncoder(&sc.tr, r.echo, r.req.ID, r.req.Info.IncludeUsage)
	}
	for {
		ev, err := sc.rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && sc.st.Finished && r.res.Committed {
				// The provider sent its finish (and usage), then closed cleanly without the
				// terminal frame: the answer is complete. The caller gets its dialect's end.
				return rl.endStream(r)
			}
			if errors.Is(err, io.EOF) {
				err = &failure.Error{Class: failure.UpstreamError, Msg: "the provider ended the stream early"}
			} else if errors.Is(err, sse.ErrEventTooLarge) {
				err = failure.Wrap(failure.UpstreamError, "the provider sent an oversized stream event", err)
			} else if errors.Is(err, io.ErrUnexpectedEOF) {
				err = failure.Wrap(failure.UpstreamError, "the provider ended the stream early", err)
			} else {
				err = call.Err(ctx, err)
			}
			return rl.streamFailure(r, err)
		}
		var out []byte
		var kind dialect.FrameKind
		if r.cross {
			out, kind = sc.tr.scanFrame(sc.out[:0], ev, r.up, codec, &sc.st)
		} else {
			out, kind = codec.ScanFrame(sc.out[:0], ev, &sc.st)
			out = validUTF8(out)
		}
		sc.out = out
		switch kind {
		case dialect.FrameDrop:
			continue
		case dialect.FrameError:
			return rl.streamFailure(r, r.up.NormalizeStreamError(ev.Data))
		case dialect.FrameLifecycle:
			if !r.res.Committed {
				if len(sc.hold)+len(out) > MaxHeldBytes {
					return rl.streamFailure(r, &failure.Error{Class: failure.UpstreamError, UpstreamStatus: call.Status,
						Msg: "the provider sent more than 64 KiB of stream events before any output"})
				}
				sc.hold = append(sc.hold, out...)
				continue
			}
		case dialect.FrameSemantic, dialect.FrameDone:
			if kind == dialect.FrameDone && !r.res.Committed {
				// The stream's end before any output or finish (`data: [DONE]` alone, a bare
				// message_stop): the provider answered nothing. It fails over like any failure
				// before commit; an empty stream never reaches the caller as a success.
				return rl.streamFailure(r, &failure.Error{Class: failure.UpstreamError, UpstreamStatus: call.Status,
					Msg: "the provider ended the stream without any output"})
			}
			if !r.res.Committed {
				call.Output() // the first-output deadline is met
				if err := r.gate(ctx); err != nil {
					return err
				}
				ms := msSince(r.a.DispatchedAt, time.Now())
				r.a.FirstTokenMS = &ms
				r.commit(true)
				// Who serves comes first (a comment the SDKs skip); sc.resp is free on a stream.
				sc.resp = r.appendStreamMetadata(sc.resp[:0])
				if _, err := r.w.Write(sc.resp); err != nil {
					return rl.callerGone(r)
				}
				if len(sc.hold) > 0 {
					if _, err := r.w.Write(sc.hold); err != nil {
						return rl.callerGone(r)
					}
				}
				if cap(sc.hold) > maxKeptHold { // a long preamble: not held for the rest of the stream
					sc.hold = nil
				}
			}
		}
		if _, err := r.w.Write(out); err != nil {
			return rl.callerGone(r)
		}
		if kind == dialect.FrameSemantic {
			r.frames++
			r.res.Gaps.event(time.Now())
		}
		if err := r.rc.Flush(); err != nil {
			return rl.callerGone(r)
		}
		if kind == dialect.FrameDone {
			r.a.FinishReason = sc.st.FinishReason
			call.Drain() // lets the connection be reused
			r.res.Usage, r.res.UsageSeen = sc.st.Usage, sc.st.UsageSeen
			r.finishUsage(sc.st.Usage, sc.st.UsageSeen)
			r.a.Outcome = audit.OutcomeCompleted
			return nil
		}
	}
}

// endStream completes a committed stream whose provider sent its finish and then ended the
// body cleanly without the terminal frame: the caller gets the terminal frame its dialect
// expects (the translated stream's end, or `data: [DONE]` / message_stop), and the attempt is
// completed and billed from the usage seen (estimated when none was), never marked truncated.
func (rl *Relay) endStream(r *attemptRun) error {
	sc := r.sc
	if r.cross {
		sc.out = r.req.Codec.encodeStream(&sc.tr, sc.out[:0], &dialect.Event{Type: dialect.EventDone})
	} else {
		sc.out = r.req.Codec.appendStreamDone(sc.out[:0])
	}
	if _, err := r.w.Write(sc.out); err != nil {
		return rl.callerGone(r)
	}
	if err := r.rc.Flush(); err != nil {
		return rl.callerGone(r)
	}
	r.res.Usage, r.res.UsageSeen = sc.st.Usage, sc.st.UsageSeen
	r.finishUsage(sc.st.Usage, sc.st.UsageSeen)
	r.a.Outcome = audit.OutcomeCompleted
	r.a.FinishReason = sc.st.FinishReason
	return nil
}

// responseFinishReason is the finish reason of a non-stream response body of the codec's
// dialect: the first choice's finish_reason (OpenAI chat completions) or the stop_reason
// (Anthropic messages); "" when it has none.
func responseFinishReason(up Codec, body []byte) string {
	path := "stop_reason"
	if up.isOpenAI() {
		path = "choices.0.finish_reason"
	}
	v := gjson.GetBytes(body, path)
	if v.Type != gjson.String {
		return ""
	}
	return dialect.InternFinishReason(v.Str)
}

// streamFailure handles a failure inside a stream. Before commit it is returned for failover
// (or to be returned directly when it does not fail over). After commit the caller gets one
// terminal error event and the stream ends (R-FAIL-4); the underlying failure is returned so
// that it counts on the circuit when its class is failover-eligible.
func (rl *Relay) streamFailure(r *attemptRun, err error) error {
	fe := failure.From(err)
	if !r.res.Committed {
		return fe
	}
	r.res.Usage, r.res.UsageSeen = r.sc.st.Usage, r.sc.st.UsageSeen
	r.finishUsage(r.sc.st.Usage, r.sc.st.UsageSeen)
	if fe.Class == failure.Cancelled {
		r.a.Outcome, r.a.ErrorCode = audit.OutcomeCancelled, string(failure.Cancelled)
		r.res.Class = failure.Cancelled
		return fe
	}
	r.a.Outcome, r.a.ErrorCode = audit.OutcomeTruncated, string(failure.UpstreamTruncated)
	r.res.Class = failure.UpstreamTruncated
	term := &failure.Error{Class: failure.UpstreamTruncated, Msg: "the provider failed after the response started; the response is incomplete"}
	if fe.Class == failure.GatewayError {
		term.Msg = "the gateway is shutting down; the response is incomplete"
	}
	if r.cross {
		r.sc.out = r.req.Codec.encodeStreamError(&r.sc.tr, r.sc.out[:0], term, r.req.ID)
	} else {
		r.sc.out = r.req.Codec.AppendStreamError(r.sc.out[:0], term, r.req.ID)
	}
	if _, err := r.w.Write(r.sc.out); err == nil {
		_ = r.rc.Flush()
	}
	under := *fe
	under.Hang = false // a stall after commit truncates; the hang rule is about missing headers
	return &under
}

func (rl *Relay) callerGone(r *attemptRun) error {
	r.a.Outcome, r.a.ErrorCode = audit.OutcomeCancelled, string(failure.Cancelled)
	r.res.Class = failure.Cancelled
	r.res.Usage, r.res.UsageSeen = r.sc.st.Usage, r.sc.st.UsageSeen
	r.finishUsage(r.sc.st.Usage, r.sc.st.UsageSeen)
	return &failure.Error{Class: failure.Cancelled, Msg: "the caller went away"}
}

// gate runs the request's commit gate (Request.Gate) before its first commit.
func (r *attemptRun) gate(ctx context.Context) error {
	if r.req.Gate == nil {
		return nil
	}
	return r.req.Gate.Secure(ctx)
}

// commit writes the response headers: from here on the request never switches (R-FAIL-3).
func (r *attemptRun) commit(stream bool) {
	r.res.Committed = true
	r.res.Status = http.StatusOK
	h := r.w.Header()
	if stream {
		h["Content-Type"] = eventStreamValue
		h["Cache-Control"] = noCacheValue
		h["X-Accel-Buffering"] = noValue
	} else {
		h["Content-Type"] = jsonValue
	}
	dh := r.headers
	h["X-Switchyard-Deployment"] = dh.name
	h["X-Switchyard-Provider"] = r.providerHeader()
	h["X-Switchyard-Upstream-Model"] = []string{r.upName}
	h["X-Switchyard-Attempts"] = attemptsValue(r.total)
	if r.echo != r.req.Info.Model { // a fallback model served (R-FAIL-8, contract.md)
		h["X-Switchyard-Model"] = []string{r.echo}
	}
	r.w.WriteHeader(http.StatusOK)
}

// finishUsage records the attempt's usage and cost (R-BILL-2): the provider's report when there
// was one; otherwise, for output that reached the caller, an estimate — input from the
// provider's preamble or the gateway's estimate of the request, output one token per delta
// written — marked "estimated", so a cut or cancelled stream is never billed at zero.
func (r *attemptRun) finishUsage(u dialect.Usage, seen bool) {
	u = saturateUsage(u)
	r.a.UsageProvenance = audit.ProvenanceObserved
	if !seen {
		r.a.UsageProvenance = audit.ProvenanceUnknown
		if r.estimated {
			r.a.UsageProvenance = audit.ProvenanceEstimated
		} else if r.frames > 0 {
			if u.Input == 0 && u.Cached == 0 && u.CacheWrite == 0 {
				u.Input = int64(r.req.InputTokens)
			}
			u.Output = max(u.Output, int64(r.frames))
			r.a.UsageProvenance = audit.ProvenanceEstimated
		}
	}
	r.res.Usage = u
	r.a.Tokens = audit.Tokens{Input: u.Input, Cached: u.Cached, CacheWrite: u.CacheWrite, Output: u.Output, Reasoning: u.Reasoning, WebSearchRequests: u.WebSearchRequests}
	if r.price != nil && r.a.Price != nil {
		var rates catalog.Rates
		r.a.CostUSD, rates = costUSD(u, r.price)
		fillSnapshot(r.a.Price, r.price, rates)
		r.a.Price.CacheWrite1hTokens = min(u.CacheWrite1h, u.CacheWrite)
	}
	if r.images > 0 && r.a.Price != nil && r.a.Price.PerImageUSD > 0 {
		// Images are billed per image returned on top of their tokens (docs/routing.md "Images").
		r.a.CostUSD = math.Round(r.a.CostUSD*1e6+float64(r.images)*r.a.Price.PerImageUSD*1e6) / 1e6
	}
}

// MaxUsageTokens bounds each provider-reported token count (2^40, about 10^12: far above any
// real request): absurd reports saturate there, and a negative one counts 0, so that no sum of
// usage (the tokens a limit settles, a cost, a ledger's total over many such requests) can
// overflow or refund.
const MaxUsageTokens = 1 << 40

// saturateUsage clamps every count of u to [0, MaxUsageTokens].
func saturateUsage(u dialect.Usage) dialect.Usage {
	for _, v := range [...]*int64{&u.Input, &u.Cached, &u.CacheWrite, &u.CacheWrite1h, &u.Output, &u.Reasoning, &u.WebSearchRequests} {
		*v = min(max(*v, 0), MaxUsageTokens)
	}
	return u
}

// BillingBYOK is the billing_source of an attempt on a caller's own connection (R-POLICY,
// R-AUDIT-2): no price snapshot, cost 0.
const BillingBYOK = "byok"

// priceOf is the billing price of a route (R-BILL-3): none for a caller's own connection
// (BillingBYOK), else the catalog model's price when set, otherwise the serving route's (its
// configured price or the price catalog's), otherwise none.
func priceOf(m *catalog.Model, rt *catalog.Route) (*catalog.Price, string) {
	switch {
	case rt.Deployment.BYOK: // the caller's own key: its provider bills the caller (R-POLICY)
		return nil, BillingBYOK
	case m != nil && m.Price != nil:
		return m.Price, "model_price"
	case rt.Price != nil:
		return rt.Price, "route_price"
	}
	return nil, "unpriced"
}

// snapshotOf is the audit's snapshot of price p at rates r; nil for a nil p.
func snapshotOf(p *catalog.Price, r catalog.Rates) *audit.PriceSnapshot {
	if p == nil {
		return nil
	}
	s := new(audit.PriceSnapshot)
	fillSnapshot(s, p, r)
	return s
}

func fillSnapshot(s *audit.PriceSnapshot, p *catalog.Price, r catalog.Rates) {
	src := p.Source
	if src == "" {
		src = catalog.PriceFromConfig
	}
	*s = audit.PriceSnapshot{InputPerMTokUSD: r.Input, OutputPerMTokUSD: r.Output, PerImageUSD: p.PerImageUSD,
		CacheReadPerMTokUSD: r.CacheRead, CacheWritePerMTokUSD: r.CacheWrite, CacheWrite1hPerMTokUSD: r.CacheWrite1h,
		TierAboveInputTokens: r.Tier, Source: src, WebSearchUSD: r.WebSearch}
}

// costUSD is the cost of usage u at price p (contract.md "Additions pinned in round 4"), in
// USD, rounded to the nearest micro-USD: the amount the ledger settles (integer micro-USD), so
// the audit's cost_usd and the ledger's agree. Each count is billed at its own price: uncached
// input at input, cache reads at cache_read, cache writes at cache_write (one-hour writes at
// cache_write_1h), output at output, all at the long-context tier the attempt's total input
// reaches (the rates returned), and web searches at web_search each. A nil p costs 0.
func costUSD(u dialect.Usage, p *catalog.Price) (float64, catalog.Rates) {
	if p == nil {
		return 0, catalog.Rates{}
	}
	// Each count converted on its own (saturateUsage bounds them): no sum can wrap.
	r := p.Rates(u.Input + u.Cached + u.CacheWrite)
	micro := r.MicroUSD(u.Input, u.Cached, u.CacheWrite, u.CacheWrite1h, u.Output) + r.WebSearchMicroUSD(u.WebSearchRequests)
	return math.Round(micro) / 1e6, r
}

// WriteError writes a caller-facing error in the codec's dialect: the status of the class, the
// contract's headers (x-switchyard-error-code, x-should-retry, retry-after,
// x-switchyard-limit-kind, x-switchyard-attempts) and the error body. buf is scratch space (may be nil).
func WriteError(w http.ResponseWriter, codec Codec, requestID string, fe *failure.Error, attempts int, buf []byte) {
	writeErrorHeaders(w.Header(), fe, attempts)
	status := fe.HTTPStatus()
	if status == failure.StatusClientClosedRequest {
		return // nobody to answer
	}
	w.WriteHeader(status)
	_, _ = w.Write(codec.AppendErrorBody(buf, fe, requestID))
}

// The x-should-retry values (failure.Error.ShouldRetry), shared: nothing mutates them.
var shouldRetryTrue, shouldRetryFalse = []string{"true"}, []string{"false"}

// writeErrorHeaders sets the headers of an error response (WriteError).
func writeErrorHeaders(h http.Header, fe *failure.Error, attempts int) {
	h["Content-Type"] = jsonValue
	h["X-Switchyard-Error-Code"] = []string{string(fe.Class)}
	h["X-Switchyard-Attempts"] = attemptsValue(attempts)
	if fe.ShouldRetry() {
		h["X-Should-Retry"] = shouldRetryTrue
	} else {
		h["X-Should-Retry"] = shouldRetryFalse
	}
	if fe.RetryAfter > 0 {
		secs := int((fe.RetryAfter + time.Second - 1) / time.Second)
		h["Retry-After"] = []string{strconv.Itoa(secs)}
	}
	if fe.LimitKind != "" {
		h["X-Switchyard-Limit-Kind"] = []string{fe.LimitKind}
	}
}

// Answered reports whether this package started a response on the writer whose header map is
// h: the commit and WriteError both set x-switchyard-attempts before writing. A panic handler
// must not write after that: the response (a stream, or a body) is under way or complete, and
// the relay ends a running stream itself.
func Answered(h http.Header) bool { return h["X-Switchyard-Attempts"] != nil }

func msSince(from, to time.Time) float64 { return float64(to.Sub(from).Microseconds()) / 1000 }

// readLimited appends r's content to dst, reading at most limit bytes; more is an error.
func readLimited(dst []byte, r io.Reader, limit int) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return buf.Bytes(), err
	}
	if n > int64(limit) {
		return buf.Bytes()[:limit], &failure.Error{Class: failure.UpstreamError, Msg: "the provider's response is too large"}
	}
	return buf.Bytes(), nil
}

// observe hands one attempt's outcome to the statistics windows, off the request path.
func (rl *Relay) observe(a *audit.Attempt, err error) {
	if rl.Stats == nil {
		return
	}
	o := stats.Observation{Deployment: a.Deployment, Model: a.Model, At: a.EndedAt,
		Duration: a.EndedAt.Sub(a.DispatchedAt), OutputTokens: int(a.Tokens.Output)}
	if fe := failure.From(err); fe != nil {
		o.Outcome = fe.Class
	}
	if a.FirstTokenMS != nil {
		o.TTFT = time.Duration(*a.FirstTokenMS * float64(time.Millisecond))
	}
	rl.Stats.Record(o)
}
