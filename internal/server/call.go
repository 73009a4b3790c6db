package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/billing"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect/form"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/relay"
)

// callState is the pooled working memory of one model call. releaseCall returns it to the
// pool, without buffers over maxPooledBytes.
type callState struct {
	// body is the caller's request body (readBody).
	body []byte
	// held is the bytes of body charged to the in-flight cap (server.max_inflight_body_bytes;
	// body.go), returned by releaseCall.
	held int64
	plan plan.Plan
	req  relay.Request
	// stripped is the body without the members the gateway consumes (routing.go).
	stripped []byte
	// fbPlans are the plans of fallback models (reused); fallbacks the ones of this request.
	fbPlans   []*plan.Plan
	fallbacks []relay.Fallback
	// byok is scratch for the routes of the caller's own connections (byok.go).
	byok []*catalog.Route
	// form is scratch for the consumed parts of a multipart body (readFormHints).
	form []form.Part
	// metered says the request holds money (a budget or a prepaid balance): reserve sets it.
	metered bool
	// obs is what the metrics, the access log and the trace need beyond the audit record
	// (observe.go).
	obs callObs
}

// serveModelCall is the whole path for every surface that calls a model, in six steps
// (docs/architecture-notes.md): auth (authenticate, server.go) → body (readCallBody: read once,
// under the request limits) → plan (route: resolve the model and its suffix, R-MODEL,
// R-SUFFIX, routing.go; then the plans of the model and its fallbacks with the caller's own
// connections merged, R-ADMIT, R-ORDER, R-FAIL-8, plan.go) → reserve (the caller's limits,
// budgets and prepaid reserve, R-BILL-1; reserve below) → relay (the attempt loop, R-FAIL;
// internal/relay) → bill (settle or release, R-BILL-2; bill below), then the audit record to
// the recorder without blocking (R-AUDIT).
func (s *Server) serveModelCall(w http.ResponseWriter, r *http.Request, sf *surface) {
	start := time.Now()
	rid := requestID(w)
	codec := sf.codec
	cs := s.pool.Get().(*callState)
	defer s.releaseCall(cs) // the in-flight body bytes too, also on a panic
	rec := &audit.Record{RequestID: rid, Surface: sf.name, CreatedAt: start}
	ob := &cs.obs
	ob.reset()
	ob.callerRID = callerRequestID(r)
	rec.CallerRequestID = ob.callerRID
	ctx := r.Context()
	if s.tracing != nil {
		ctx = s.beginTrace(ctx, r, sf, start, ob) // the relay's Sends carry the attempts' traceparent
	}
	var pr prepared
	fail := func(err error) {
		fe := failure.From(err)
		if pr.debug && pr.planned { // a refusal after planning: the plan says why (extra.debug)
			relay.WriteErrorDebug(w, codec, rid, fe, 0,
				relay.AppendDebug(nil, rid, &cs.plan, cs.fallbacks, &rec.AdmissionEvents, nil))
		} else {
			relay.WriteError(w, codec, rid, fe, 0, nil)
		}
		rec.Status, rec.ErrorCode = fe.HTTPStatus(), string(fe.Class)
		ob.refused = fe.LimitKind
		s.finish(rec, start, ob)
	}

	// 1. auth
	who, err := s.authenticate(r)
	if err != nil {
		fail(err)
		return
	}
	rec.Account, rec.KeyID, ob.keyID = who.account, who.keyID, who.keyID
	// 2. body
	body, err := s.readCallBody(w, r, cs, sf)
	if err != nil {
		fail(err)
		return
	}
	// 3. plan
	err = s.route(cs, who, sf, body, &pr)
	s.notePlan(rec, cs, &pr, err)
	if err != nil {
		fail(err)
		return
	}
	// 4. reserve: limits, budgets and the prepaid reserve, after planning and before the first
	// attempt, in one reservation that owns the request's money until it ends (internal/billing;
	// limits.go). A refusal never fails over (R-BILL-1). Anonymous callers and keys without
	// limits or a prepaid balance do not call the admission store.
	res, reserve, err := s.reserve(r, cs, &pr, sf, who, rid, &rec.AdmissionEvents)
	if err != nil {
		fail(err)
		clear(cs.fallbacks)
		return
	}
	defer res.Release() // a panic in the relay still frees the slot, the reserve and the ledger's
	// 5. relay
	s.relayRequest(&cs.req, r, cs, &pr, sf, rid, res, reserve, rec)
	out := s.relay.Run(ctx, w, &cs.req, &cs.plan)
	cs.req = relay.Request{}
	clear(cs.fallbacks)
	// 6. bill: ended before the audit record is queued, so a caller that read it may call again.
	bill(res, &out, reserve)
	rec.Status, rec.ErrorCode, rec.Attempts = out.Status, string(out.Class), out.Attempts
	ob.gaps = out.Gaps
	s.finish(rec, start, ob)
}

// readCallBody is the body step: the multipart boundary of a form surface from its
// Content-Type (refused before the body is read), the body read once (readBody), and the body's
// first boundary checked against the header's.
func (s *Server) readCallBody(w http.ResponseWriter, r *http.Request, cs *callState, sf *surface) ([]byte, error) {
	var boundary string
	if sf.form { // refused before the body is read: a multipart surface needs its boundary
		var err error
		if boundary, err = form.Boundary(r.Header.Get("Content-Type")); err != nil {
			return nil, err
		}
	}
	body, err := s.readBody(w, r, cs)
	if err != nil {
		return nil, err
	}
	if sf.form && openai.FirstBoundary(body) != boundary {
		return nil, &failure.Error{Class: failure.InvalidRequest, Msg: "the multipart/form-data body does not begin with the boundary of its Content-Type header"}
	}
	return body, nil
}

// notePlan records the plan step in the audit record and the observation: the model and
// stream flag as far as they were read, the routes the plan dropped for open circuits and
// pauses (events.go), and a refusal (err with pr.refused).
func (s *Server) notePlan(rec *audit.Record, cs *callState, pr *prepared, err error) {
	rec.Model, rec.Stream = pr.info.Model, pr.info.Stream
	if pr.res.Model != nil {
		cs.obs.model = pr.res.Model.ID
	}
	if pr.planned {
		s.planEvents(&rec.AdmissionEvents, cs) // routes dropped for open circuits and pauses (events.go)
	}
	if err != nil && pr.refused {
		rec.AdmissionEvents.Add(refusedEvent(err))
	}
}

// relayRequest fills req, the relay's view of the call: the planned body and model, its
// fallbacks, limits and reserve. A request that holds money is held to its reserve's output
// basis (relay.Request.CapOutput) and, when its reserve is queued, made durable at the commit
// (relay.Request.Gate), not before dispatch.
func (s *Server) relayRequest(req *relay.Request, r *http.Request, cs *callState, pr *prepared, sf *surface, rid string,
	res *billing.Reservation, reserve int64, rec *audit.Record) {
	ob := &cs.obs
	*req = relay.Request{ID: rid, Surface: sf.dialect, Protocol: sf.protocol, Codec: sf.codec, Body: pr.body, Info: pr.info, Resolution: pr.res,
		AnthropicBeta: r.Header.Get("Anthropic-Beta"), Fallbacks: cs.fallbacks, AttemptLimit: pr.attemptLimit, InputTokens: pr.inputTokens,
		GatewayProvider: s.gatewayProvider, CapOutput: cs.metered, FinishReasons: ob.tr.span != nil && ob.tr.span.IsRecording(),
		Events: &rec.AdmissionEvents, Debug: pr.debug, ReservedMaxUSD: float64(reserve) / 1e6}
	if res.Queued() {
		req.Gate = res // the reserve made durable at the commit, not before dispatch
	}
	if sf.form {
		req.ContentType = r.Header["Content-Type"] // the caller's boundary: the body keeps it
	}
}

// reserve admits the request's limits and money (R-BILL-1, R-BILL-4): its layers' limits and
// budgets and, for a prepaid account whose plans use the house's routes, its balance, all in
// one reservation. A credit refusal of a plan that mixes the caller's own connections and house
// routes drops the house routes and reserves again without the balance (docs/routing.md
// "Routing policies and BYOK"). It returns the reservation and the reserve in micro-USD, and
// adds its admission events to ev: limits checked (when the admission store is asked), the
// reserve taken (when the request holds money), a refusal, the house routes dropped.
func (s *Server) reserve(r *http.Request, cs *callState, pr *prepared, sf *surface, who caller, rid string, ev *audit.AdmissionEvents) (*billing.Reservation, int64, error) {
	// A plan of the caller's own connections only (funding byok) bills nothing: no credit check.
	prepaid := s.cache != nil && who.account != "" && s.cache.Prepaid(who.account) && billable(cs)
	req := billing.Request{AccountID: who.account, KeyID: who.keyID, RequestID: rid, Model: pr.res.Model.ID}
	req.Admission.Layers = who.layers
	if len(who.layers) > 0 || prepaid {
		req.Admission.Tokens, req.Admission.ReserveMicroUSD = charge(cs, pr, sf.protocol)
	}
	if prepaid {
		req.Admission.CreditAccount = who.account
	}
	asked := len(req.Admission.Layers) > 0 || req.Admission.CreditAccount != "" // billing.Reserve calls the store
	if asked {
		ev.Add(limitsEvent(&req.Admission))
	}
	res, err := s.billing.Reserve(r.Context(), req)
	if before := candidates(cs); err != nil && prepaid && dropHouse(cs, err) {
		ev.Add(refusedEvent(err))
		ev.Add(audit.AdmissionEvent{Kind: audit.EventHouseRoutesDropped, Count: before - candidates(cs)})
		req.Admission.CreditAccount = ""
		req.Admission.Tokens, req.Admission.ReserveMicroUSD = charge(cs, pr, sf.protocol)
		if len(req.Admission.Layers) > 0 {
			ev.Add(limitsEvent(&req.Admission))
		}
		res, err = s.billing.Reserve(r.Context(), req)
	}
	cs.metered = req.Admission.Metered()
	switch {
	case err != nil:
		ev.Add(refusedEvent(err))
	case cs.metered:
		ev.Add(reserveEvent(&req.Admission))
	}
	return res, req.Admission.ReserveMicroUSD, err
}

// bill ends a request's reservation (R-BILL-1, R-BILL-2): a committed request settles to the
// committed attempt's usage and cost (the last attempt: the relay never switches after commit)
// in integer micro-USD, in the admission store and then the ledger (queued, not waited for);
// any other request is released, billing nothing. The reserve is recorded on every attempt as
// reserved_max_usd.
func bill(res *billing.Reservation, out *relay.Result, reserveMicroUSD int64) {
	reserved := float64(reserveMicroUSD) / 1e6
	for i := range out.Attempts {
		out.Attempts[i].ReservedMaxUSD = reserved
	}
	if !out.Committed || len(out.Attempts) == 0 {
		res.Release()
		return
	}
	a := &out.Attempts[len(out.Attempts)-1]
	u := &out.Usage
	t := &a.Tokens
	res.Settle(billing.Settlement{
		TotalTokens: u.Input + u.Cached + u.CacheWrite + u.Output, CostMicroUSD: admission.MicroUSD(a.CostUSD),
		Tokens: accounts.Tokens{Input: t.Input, Cached: t.Cached, CacheWrite: t.CacheWrite, Output: t.Output, Reasoning: t.Reasoning},
		Model:  a.Model, Deployment: a.Deployment, Mark: settleMark(a.Outcome), Provenance: a.UsageProvenance,
	})
}

// errContentEncoding refuses a request body sent with a Content-Encoding (gzip, br, ...): 415
// invalid_request in the caller's dialect, nothing read or sent upstream (docs/behaviour.md
// "Request limits"). The official SDKs never compress request bodies: a decompressor and its
// own size cap on the request path would serve no client that needs them, and a compressed body
// must not be read as JSON that is "not valid UTF-8". Shared: nothing mutates it.
var errContentEncoding = &failure.Error{Class: failure.InvalidRequest, Status: http.StatusUnsupportedMediaType, Param: "Content-Encoding",
	Msg: "the request body has a Content-Encoding; the gateway accepts only uncompressed (identity) bodies: send the body without Content-Encoding"}

// identityOnly is the Accept-Encoding of a 415 for a Content-Encoding.
var identityOnly = []string{"identity"}

// encoded reports whether the request says its body has a content coding other than identity.
func encoded(h http.Header) bool {
	for _, v := range h["Content-Encoding"] {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return true
			}
		}
	}
	return false
}

// readBody reads the whole body once (architecture: before any dispatch, golang/go#40747) into
// cs.body, under the request limits of docs/behaviour.md "Request limits":
//   - server.max_body_bytes: a larger body is 413 request_too_large (from its Content-Length,
//     before reading, or once that many bytes arrived);
//   - server.max_inflight_body_bytes: the body's bytes are charged to the cap of all bodies in
//     flight before they are read (holdBody); over it, 503 gateway_error with retry-after;
//   - server.body_timeout: the read deadline of the connection is set to now + body_timeout
//     for the read and cleared after it (net/http clears it too when the body ends, for its
//     background read): the answer (a stream) and a kept-alive connection's next request
//     have no such deadline; past it, 400 invalid_request;
//   - a body that cannot be read (bad chunked framing, shorter than its Content-Length) is 400
//     invalid_request; only a connection reset is cancelled (bodyReadError).
//
// No goroutine, timer or per-request allocation beyond the body buffer itself (when the pooled
// one is too small) and net/http's MaxBytesReader.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, cs *callState) ([]byte, error) {
	if encoded(r.Header) {
		w.Header()["Accept-Encoding"] = identityOnly // RFC 7694 §3: the codings the server takes
		return nil, errContentEncoding
	}
	n := r.ContentLength
	if n > s.maxBody {
		return nil, tooLarge(s.maxBody)
	}
	if n == 0 {
		return cs.body[:0], nil
	}
	rc := http.NewResponseController(w)
	// An http.ResponseWriter that cannot set deadlines (a test recorder, a wrapper without
	// Unwrap) reads without one.
	timed := rc.SetReadDeadline(time.Now().Add(s.bodyTimeout)) == nil
	src := http.MaxBytesReader(w, r.Body, s.maxBody)
	var err error
	if n > 0 {
		err = s.readKnown(src, cs, n)
	} else {
		err = s.readChunked(src, cs)
	}
	if err != nil {
		// The deadline stays: net/http discards what is left of the body after the handler,
		// and that must not wait longer either.
		return nil, s.bodyReadError(err)
	}
	if timed {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return cs.body, nil
}

func tooLarge(limit int64) error {
	return &failure.Error{Class: failure.RequestTooLarge, Msg: "the request body is larger than the gateway's limit of " + strconv.FormatInt(limit, 10) + " bytes"}
}

// modelLists are the precomputed GET /v1/models bodies in each SDK's shape (wire.md §3).
type modelLists struct {
	openai, anthropic []byte
}

// buildModelLists lists the catalog models that some public (non-reserved) deployment serves.
// Dedicated endpoints are not listed, to any caller (R-KEY-6; docs/routing.md): the list is
// one precomputed body, and an endpoint is a name its users are told, not discovered.
func buildModelLists(cat *catalog.Catalog) modelLists {
	type oaModel struct {
		ID            string        `json:"id"`
		Object        string        `json:"object"`
		Created       int64         `json:"created"`
		OwnedBy       string        `json:"owned_by"`
		Pricing       *ModelPricing `json:"pricing,omitempty"`
		ContextLength int           `json:"context_length,omitempty"`
	}
	type anModel struct {
		Type          string        `json:"type"`
		ID            string        `json:"id"`
		DisplayName   string        `json:"display_name"`
		CreatedAt     string        `json:"created_at"`
		Pricing       *ModelPricing `json:"pricing,omitempty"`
		ContextLength int           `json:"context_length,omitempty"`
	}
	var oa []oaModel
	var an []anModel
	for _, m := range cat.Models {
		pub := firstPublic(m)
		if pub == nil {
			continue
		}
		owner := pub.Deployment.Provider
		pr, window := listedPrice(m)
		oa = append(oa, oaModel{ID: m.ID, Object: "model", OwnedBy: owner, Pricing: pr, ContextLength: window})
		an = append(an, anModel{Type: "model", ID: m.ID, DisplayName: m.ID, CreatedAt: "1970-01-01T00:00:00Z", Pricing: pr, ContextLength: window})
	}
	if oa == nil {
		oa, an = []oaModel{}, []anModel{}
	}
	var l modelLists
	l.openai, _ = json.Marshal(map[string]any{"object": "list", "data": oa})
	first, last := "", ""
	if len(an) > 0 {
		first, last = an[0].ID, an[len(an)-1].ID
	}
	l.anthropic, _ = json.Marshal(map[string]any{"data": an, "has_more": false, "first_id": first, "last_id": last})
	return l
}

// ModelPricing is a price as the model list and the route plan show it (contract.md "Additions pinned in round
// 4"), in USD per million tokens, defaults resolved (cache prices left out are the input
// price), and WebSearch in USD per web search (left out when 0, as OpenRouter's list does;
// docs/pricing.md "Server-tool calls"); Source is "config" or "catalog".
type ModelPricing struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
	WebSearch  float64 `json:"web_search,omitempty"`
	Source     string  `json:"source,omitempty"`
}

// pricingOf is p as the model list shows it (base prices); nil for a nil p.
func pricingOf(p *catalog.Price) *ModelPricing {
	if p == nil {
		return nil
	}
	r := p.Rates(0)
	src := p.Source
	if src == "" {
		src = catalog.PriceFromConfig
	}
	return &ModelPricing{Input: r.Input, Output: r.Output, CacheRead: r.CacheRead, CacheWrite: r.CacheWrite, WebSearch: r.WebSearch, Source: src}
}

// listedPrice is what GET /v1/models shows of a model: its own price when set (what it is
// billed at, R-BILL-3), else the first public route's with a price (configured or from the
// price catalog); and its context window, else the first public route's (0: unknown).
func listedPrice(m *catalog.Model) (*ModelPricing, int) {
	var price *catalog.Price
	window := m.ContextWindowTokens
	for _, rt := range m.Routes {
		if rt.Deployment.Reserved {
			continue
		}
		if price == nil {
			price = rt.Price
		}
		if window == 0 {
			window = rt.ContextWindowTokens
		}
	}
	if m.Price != nil {
		price = m.Price
	}
	return pricingOf(price), window
}

// firstPublic returns the model's first public (non-reserved) route, or nil when it has none.
func firstPublic(m *catalog.Model) *catalog.Route {
	for _, rt := range m.Routes {
		if !rt.Deployment.Reserved {
			return rt
		}
	}
	return nil
}

// serveModels answers GET /v1/models in the OpenAI shape, or the Anthropic shape when the
// request carries anthropic-version (every Anthropic SDK request does).
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	if _, err := s.authenticate(r); err != nil {
		relay.WriteError(w, relay.CodecFor(surfaceOf(r)), requestID(w), failure.From(err), 0, nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Anthropic-Version") != "" {
		_, _ = w.Write(s.models.anthropic)
		return
	}
	_, _ = w.Write(s.models.openai)
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
