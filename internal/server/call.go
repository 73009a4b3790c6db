package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/relay"
)

// callState is the pooled working memory of one model call.
type callState struct {
	body bytes.Buffer
	plan plan.Plan
	req  relay.Request
	// stripped is the body without the members the gateway consumes (routing.go).
	stripped []byte
	// fbPlans are the plans of fallback models (reused); fallbacks the ones of this request.
	fbPlans   []*plan.Plan
	fallbacks []relay.Fallback
	// byok is scratch for the routes of the caller's own connections (byok.go).
	byok []*catalog.Route
	// obs is what the metrics, the access log and the trace need beyond the audit record
	// (observe.go).
	obs callObs
}

// serveModelCall is the whole path for every surface that calls a model: read the body once,
// authenticate, resolve the model and its suffix (R-MODEL, R-SUFFIX), build the plans of the
// model and its fallbacks (R-ADMIT, R-ORDER, R-FAIL-8; routing.go), run the attempt loop
// (R-FAIL) under the caller's limits and budget reserve (R-BILL-1, R-BILL-2; limits.go), then
// hand the audit record to the recorder without blocking (R-AUDIT).
func (s *Server) serveModelCall(w http.ResponseWriter, r *http.Request, sf *surface) {
	start := time.Now()
	rid := requestID(w)
	codec := sf.codec
	cs := s.pool.Get().(*callState)
	defer s.pool.Put(cs)
	rec := &audit.Record{RequestID: rid, Surface: sf.name, CreatedAt: start}
	ob := &cs.obs
	ob.reset()
	fail := func(err error) {
		fe := failure.From(err)
		relay.WriteError(w, codec, rid, fe, 0, nil)
		rec.Status, rec.ErrorCode = fe.Class.Status(), string(fe.Class)
		ob.refused = fe.LimitKind
		s.finish(rec, start, ob)
	}

	who, err := s.authenticate(r)
	if err != nil {
		fail(err)
		return
	}
	rec.Account, ob.keyID = who.account, who.keyID
	body, err := s.readBody(w, r, &cs.body)
	if err != nil {
		fail(err)
		return
	}
	var pr prepared
	err = s.route(cs, who, sf, body, &pr)
	rec.Model, rec.Stream = pr.info.Model, pr.info.Stream
	if pr.res.Model != nil {
		ob.model = pr.res.Model.ID
	}
	if err != nil {
		fail(err)
		return
	}
	// Limits and the reserve: after planning, before the first attempt; a refusal never fails
	// over (R-BILL-1, limits.go). Anonymous callers and keys without limits skip the store.
	// A prepaid account's balance is checked first (accounts.Cache, in memory), then the
	// limits: a request refused for credit takes nothing from the limits.
	var hold admission.Hold
	var credit accounts.Charge
	var reserve, tokens int64
	// A plan of the caller's own connections only (funding byok) bills nothing: no credit check.
	prepaid := s.cache != nil && who.account != "" && s.cache.Prepaid(who.account) && billable(cs)
	if len(who.layers) > 0 || prepaid {
		tokens, reserve = charge(cs, &pr, sf.protocol)
	}
	if prepaid {
		credit, err = s.cache.Reserve(who.account, reserve)
		if err != nil && dropHouse(cs, err) {
			// Not enough credit for the house's routes, but the caller's own connections need
			// none: they serve alone (docs/routing.md "Routing policies and BYOK").
			prepaid, err = false, nil
			tokens, reserve = charge(cs, &pr, sf.protocol)
		}
		if err != nil {
			clear(cs.fallbacks)
			fail(err)
			return
		}
		defer credit.Release() // a panic in the relay still returns the reserve
	}
	if len(who.layers) > 0 {
		hold, err = s.admit.Acquire(r.Context(), admission.Request{Layers: who.layers, Tokens: tokens, ReserveMicroUSD: reserve})
		if err != nil {
			credit.Release()
			clear(cs.fallbacks)
			fail(err)
			return
		}
		defer hold.Release() // a panic in the relay still frees the slot and the reserve
	}
	led := s.openLedger(rid, who, pr.res.Model.ID, reserve, holdsMoney(prepaid, who.layers))
	defer led.release() // a panic in the relay still ends the reserve in the ledger
	cs.req = relay.Request{ID: rid, Surface: sf.dialect, Protocol: sf.protocol, Codec: codec, Body: pr.body, Info: pr.info, Resolution: pr.res,
		AnthropicBeta: r.Header.Get("Anthropic-Beta"), Fallbacks: cs.fallbacks, AttemptLimit: pr.attemptLimit, InputTokens: pr.inputTokens}
	p := &cs.plan
	out := s.relay.Run(r.Context(), w, &cs.req, p)
	cs.req = relay.Request{}
	clear(cs.fallbacks)
	if hold != nil || prepaid {
		settle(hold, &out, reserve)
	}
	if hold != nil {
		hold.Release() // before the audit record is queued: a caller that read it may call again
	}
	s.bill(&out, &credit, &led)
	rec.Status, rec.ErrorCode, rec.Attempts = out.Status, string(out.Class), out.Attempts
	ob.gaps = out.Gaps
	s.finish(rec, start, ob)
}

// bill ends a request's charges (R-BILL-1, R-BILL-2): a committed request settles to the
// committed attempt's cost in integer micro-USD, in a prepaid account's cached balance and in
// the ledger (queued, not waited for); any other request is billed nothing, and its ledger
// reserve, if any, is released (ledger.go). A prepaid reserve not settled here is returned by
// the caller's deferred Release.
func (s *Server) bill(out *relay.Result, credit *accounts.Charge, led *requestLedger) {
	if !out.Committed || len(out.Attempts) == 0 {
		led.release()
		return
	}
	a := &out.Attempts[len(out.Attempts)-1]
	cost := admission.MicroUSD(a.CostUSD)
	credit.Settle(cost)
	led.settle(a, cost)
}

// readBody reads the whole body once (architecture: before any dispatch, golang/go#40747),
// capped at server.max_body_bytes: larger is 413 request_too_large.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) ([]byte, error) {
	buf.Reset()
	if r.ContentLength > s.maxBody {
		return nil, tooLarge(s.maxBody)
	}
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(s.maxBody)
		}
		return nil, &failure.Error{Class: failure.Cancelled, Msg: "the request body could not be read", Cause: err}
	}
	return buf.Bytes(), nil
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
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	type anModel struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}
	var oa []oaModel
	var an []anModel
	for _, m := range cat.Models {
		pub := firstPublic(m)
		if pub == nil {
			continue
		}
		owner := pub.Deployment.Provider
		oa = append(oa, oaModel{ID: m.ID, Object: "model", OwnedBy: owner})
		an = append(an, anModel{Type: "model", ID: m.ID, DisplayName: m.ID, CreatedAt: "1970-01-01T00:00:00Z"})
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
