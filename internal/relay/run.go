package relay

import (
	"context"
	"errors"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
)

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
	ch := chain{w: w, rc: http.NewResponseController(w), req: req, sc: sc, res: &res}
	defer func() {
		if v := recover(); v != nil {
			rl.recovered(v, &res, ch.held, &ch.run, w, req)
			return // sc may be inconsistent: it is not pooled again
		}
		rl.putScratch(sc)
	}()
	sc.tr.reset()
	req.plan = p

models:
	for si := 0; si <= len(req.Fallbacks); si++ {
		m := req.chainModel(si, p)
		before := len(res.Attempts)
		for i := range m.plan.Candidates {
			if req.AttemptLimit > 0 && len(res.Attempts) >= req.AttemptLimit {
				break models
			}
			if m.plan.AttemptLimit > 0 && len(res.Attempts)-before >= m.plan.AttemptLimit {
				break // the plan's own cap (provider.allow_fallbacks false)
			}
			switch rl.tryCandidate(ctx, &ch, &m, i) {
			case answered:
				return res
			case chainEnds:
				break models
			}
		}
	}
	ch.refuse(p)
	return res
}

// chain is the state Run carries from candidate to candidate over the request's plans.
type chain struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	req *Request
	sc  *scratch
	res *Result
	// held is the running attempt's circuit ticket, until it is reported; run is the running
	// attempt. Both are read by Run's panic handler (recovered).
	held circuit.Ticket
	run  attemptRun
	// last is the last attempt's failure; firstRejection the first candidate skipped without an
	// attempt (a body that cannot be carried to its dialect, a circuit or a pause): the failure
	// the caller gets when no candidate served (R-FAIL-9).
	last, firstRejection error
	// minRetryAfter is the shortest retry-after of the upstream_rate_limited failures so far.
	minRetryAfter time.Duration
}

// modelTry is one model of a request's chain (R-FAIL-8): the requested model or a fallback.
type modelTry struct {
	res  *catalog.Resolution
	plan *plan.Plan
	echo string // the model id echoed to the caller
	// maxOut is the model's max_output_tokens (0: unknown); capOut the output cap a metered
	// request sends when its caller set none (Request.CapOutput), else 0.
	maxOut, capOut int64
}

// chainModel is the si-th model of the request's chain: 0 is the requested model on plan p,
// then req.Fallbacks in order.
func (req *Request) chainModel(si int, p *plan.Plan) modelTry {
	m := modelTry{res: &req.Resolution, plan: p, echo: req.Info.Model}
	if si > 0 {
		fb := &req.Fallbacks[si-1]
		m = modelTry{res: &fb.Resolution, plan: fb.Plan, echo: fb.Resolution.Requested}
	}
	m.maxOut = int64(m.res.Model.MaxOutputTokens)
	if req.CapOutput && req.Protocol == catalog.ProtocolModel && req.Info.MaxTokens == 0 {
		m.capOut = admission.OutputTokens(0, m.maxOut)
	}
	return m
}

// tryOutcome is what one candidate's turn decided (tryCandidate).
type tryOutcome int

const (
	nextCandidate tryOutcome = iota // skipped, or failed over: the chain goes on
	chainEnds                       // a failure that does not fail over: the chain stops (R-FAIL-6)
	answered                        // the response is written (or the request ended): Run returns
)

// tryCandidate gives candidate i of m's plan its turn: the upstream body, the circuit's
// admission, one attempt, and what its outcome means for the chain (failover, stop, answered).
func (rl *Relay) tryCandidate(ctx context.Context, ch *chain, m *modelTry, i int) tryOutcome {
	req, sc, res := ch.req, ch.sc, ch.res
	mp := m.plan
	c := &mp.Candidates[i]
	dep := c.Route.Deployment
	up := CodecFor(dep.Dialect)
	// A Responses request reaches a deployment that serves the Responses API as it came
	// (pass-through, responses_passthrough.go); every other deployment translates it.
	pass := req.Surface == catalog.Responses && rl.passesResponses(dep)
	cross := dep.Dialect != req.Surface && !pass
	upName := m.res.UpstreamModel(c.Route)
	// The body comes first: a request that cannot be carried to this dialect skips the
	// candidate before any circuit or attempt is spent on it.
	var dropped []string
	if cross {
		var err error
		sc.body, dropped, err = sc.tr.appendBody(sc.body[:0], req, up, upName, m.maxOut, m.capOut, m.res.Model.Reasoning)
		if err != nil {
			if ch.firstRejection == nil {
				ch.firstRejection = err
			}
			return nextCandidate
		}
	} else if pass {
		sc.body = appendResponsesBody(sc.body[:0], req, upName, m.capOut)
	} else if m.capOut > 0 && dep.Dialect != catalog.Anthropic && !hasOutputCap(req.Body) {
		sc.out = req.Codec.AppendUpstreamBody(sc.out[:0], req.Body, &req.Info, upName)
		sc.body = appendOutputCap(sc.body[:0], sc.out, m.capOut)
	} else {
		sc.body = req.Codec.AppendUpstreamBody(sc.body[:0], req.Body, &req.Info, upName)
	}
	tk, err := rl.circuits.Admit(dep.PauseScope(), dep.Name, c.Route.Model)
	if err != nil { // not an attempt (R-AUDIT-3)
		if e, ok := RouteEvent(err, audit.StageDispatch, dep.Name, c.Route.Model); ok && req.Events != nil {
			req.Events.Add(e)
		}
		if ch.firstRejection == nil {
			ch.firstRejection = plan.CoolingDown()
		}
		return nextCandidate
	}
	if ctx.Err() != nil {
		tk.Done(context.Canceled)
		rl.ended(ctx, ch.w, req, res)
		return answered
	}
	ch.held = tk
	res.Attempts = append(res.Attempts, audit.Attempt{
		Attempt: len(res.Attempts) + 1, Deployment: dep.Name, Provider: dep.Provider, Platform: string(dep.Platform),
		Model: c.Route.Model, UpstreamModel: upName, DroppedParams: dropped,
		UsageProvenance: audit.ProvenanceUnknown, DispatchedAt: time.Now(), ReservedMaxUSD: req.ReservedMaxUSD,
	})
	a := &res.Attempts[len(res.Attempts)-1]
	price, source := priceOf(m.res.Model, c.Route)
	a.Price, a.BillingSource = snapshotOf(price, price.Rates(0)), source
	routeContext(a, c, mp)
	ch.run = attemptRun{req: req, w: ch.w, rc: ch.rc, cand: c, a: a, price: price,
		total: len(res.Attempts), sc: sc, res: res, up: up, cross: cross, pass: pass, model: m.res, echo: m.echo}
	run := &ch.run
	err = rl.attempt(ctx, run)
	run.a.EndedAt = time.Now()
	rl.observe(run.a, err)
	fe := failure.From(err)
	if fe != nil && fe.Class == failure.UpstreamRateLimited && fe.RetryAfter > 0 &&
		(ch.minRetryAfter == 0 || fe.RetryAfter < ch.minRetryAfter) {
		ch.minRetryAfter = fe.RetryAfter
	}
	ch.held = circuit.Ticket{}
	if res.Committed || fe == nil {
		tk.Done(err) // success, or a failure after commit (counted when failover-eligible, R-FAIL-4)
		if req.Debug && req.Info.Stream && res.Committed && res.Class != failure.Cancelled {
			writeDebugComment(ch.w, req, res)
		}
		return answered
	}
	tk.Done(fe)
	run.a.Outcome, run.a.ErrorCode = audit.OutcomeFailed, string(fe.Class)
	if rl.Logf != nil && fe.Class != failure.Cancelled {
		rl.Logf("request %s attempt %d deployment %s failed: %v", req.ID, run.a.Attempt, dep.Name, fe)
	}
	if fe.Class == failure.Cancelled || (ctx.Err() != nil && fe.Class != failure.GatewayError) {
		run.a.Outcome = audit.OutcomeCancelled
		rl.ended(ctx, ch.w, req, res)
		return answered
	}
	ch.last = fe
	if !fe.Class.FailsOver() { // R-FAIL-6: returned directly; R-FAIL-8: ends the chain
		return chainEnds
	}
	mp.Failover(i+1, c.Route, fe.Class) // inside or across regions by class (docs/routing.md)
	return nextCandidate
}

// refuse answers a request that no candidate served: R-FAIL-9, the last failure when a call
// was made, else the first rejection, else the plan's refusal (p: the requested model's plan).
func (ch *chain) refuse(p *plan.Plan) {
	final := ch.last
	if final == nil {
		final = ch.firstRejection
	}
	if final == nil {
		final = p.Refusal()
	}
	fe := failure.From(final)
	if fe.Class == failure.UpstreamRateLimited && ch.minRetryAfter > 0 {
		cp := *fe
		cp.RetryAfter = ch.minRetryAfter
		fe = &cp
	} else if fe.Class == failure.UpstreamError && fe.UpstreamStatus == http.StatusServiceUnavailable && fe.Status == 0 {
		// The provider said it is unavailable: the caller gets its 503 and its retry-after
		// (docs/errors.md "Upstream 529 and 503"), still upstream_error.
		cp := *fe
		cp.Status = http.StatusServiceUnavailable
		fe = &cp
	}
	ch.res.Status, ch.res.Class = fe.HTTPStatus(), fe.Class
	ch.req.writeError(ch.w, fe, ch.res, ch.sc.out[:0])
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
