package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/relay"
)

// RoutePlan is the plan of one request as POST /v1/route answers it and `switchyard route`
// prints it (contract.md, R-ORDER-8): the requested model's candidates in the order they would
// be tried, then those of its fallback models (R-FAIL-8), and every dropped route with its
// reason. It is built from the very plans a model call runs.
type RoutePlan struct {
	Model         string `json:"model"`          // the caller's model string, suffix included
	ResolvedModel string `json:"resolved_model"` // the catalog model id
	// Endpoint is the dedicated endpoint the model string named (R-KEY-6); "" (omitted) for a
	// model. Its reserved candidates come first, marked reserved.
	Endpoint string `json:"endpoint,omitempty"`
	// Policy is the caller's routing policy id (R-POLICY); "" (omitted) when none applies.
	Policy string `json:"policy,omitempty"`
	// Funding is the funding rule applied: the policy's (house, byok, byok_with_house_fallback),
	// or byok_with_house_fallback for a key with connections and no policy; "" (omitted) when
	// neither applies.
	Funding  string `json:"funding,omitempty"`
	Strategy string `json:"strategy"`
	// DegradedFrom is the requested strategy when it had no measurements and the plan fell
	// back to balanced (R-ORDER-4); "" otherwise.
	DegradedFrom string `json:"degraded_from,omitempty"`
	// SessionKey seeded the order inside tie bands (R-ORDER-5); "" is a fresh random seed.
	SessionKey string `json:"session_key"`
	// AttemptLimit caps the attempts of the request (R-FAIL-10, provider.allow_fallbacks
	// false); 0 (omitted) is no cap beyond the candidates.
	AttemptLimit int              `json:"attempt_limit,omitempty"`
	Candidates   []RouteCandidate `json:"candidates"`
	Dropped      []plan.Dropped   `json:"dropped"`
	// Refusal is what the real request would get when no route is admitted (issue 11 item 10):
	// POST /v1/route then answers 200 with empty candidates, every route in dropped with its
	// reason, and this; nil (omitted) when the request would be routed.
	Refusal *RouteRefusal `json:"refusal,omitempty"`
	// Failover is how a failed attempt reorders the candidates not yet tried, by failure class
	// (plan.Failover, docs/routing.md "Regions"); present (non-nil) when some candidate has a
	// region.
	Failover *RegionFailover `json:"failover,omitempty"`
}

// RouteRefusal is the error a model call would be answered with, without any upstream call.
type RouteRefusal struct {
	// Status is the HTTP status, ErrorType the canonical class (the error body's error_type).
	Status    int           `json:"status"`
	ErrorType failure.Class `json:"error_type"`
	Message   string        `json:"message"`
	// Param names the request field at fault; "" (omitted) when none.
	Param string `json:"param,omitempty"`
	// RetryAfter is the retry-after in whole seconds the answer carries; 0 (omitted) when none.
	RetryAfter int `json:"retry_after,omitempty"`
}

// refusalOf renders fe as a RouteRefusal.
func refusalOf(fe *failure.Error) *RouteRefusal {
	return &RouteRefusal{Status: fe.HTTPStatus(), ErrorType: fe.Class, Message: fe.Msg, Param: fe.Param,
		RetryAfter: int((fe.RetryAfter + time.Second - 1) / time.Second)}
}

// RegionFailover lists the failure classes of each region rule (issue 11 item 6, seed 003):
// after a failure of a class in SameRegionFirst the untried candidates of the failed route's
// region come first, after one in OtherRegionFirst those of other regions; each part keeps the
// plan order. Every other class does not fail over (the request ends).
type RegionFailover struct {
	SameRegionFirst  []failure.Class `json:"same_region_first"`
	OtherRegionFirst []failure.Class `json:"other_region_first"`
}

// regionFailover is the rule table, from plan.RegionRule.
func regionFailover() *RegionFailover {
	rf := &RegionFailover{SameRegionFirst: []failure.Class{}, OtherRegionFirst: []failure.Class{}}
	for _, c := range failure.Classes {
		switch plan.RegionRule(c) {
		case plan.SameRegionFirst:
			rf.SameRegionFirst = append(rf.SameRegionFirst, c)
		case plan.OtherRegionFirst:
			rf.OtherRegionFirst = append(rf.OtherRegionFirst, c)
		}
	}
	return rf
}

// RouteCandidate is one candidate of a RoutePlan.
type RouteCandidate struct {
	Deployment string `json:"deployment"`
	Provider   string `json:"provider"`
	// Platform is the service behind the deployment's dialect: openai, anthropic, bedrock,
	// vertex or azure (contract.md, round 3).
	Platform      string  `json:"platform"`
	Model         string  `json:"model"`          // the catalog model id of the route
	UpstreamModel string  `json:"upstream_model"` // the id sent to the provider
	Priority      int     `json:"priority"`
	Weight        float64 `json:"weight"`
	// Region is the route's region (its own, else its deployment's); omitted when none.
	Region string `json:"region,omitempty"`
	// Band is the 0-based tie band (R-ORDER-3), counted along the whole plan: a fallback
	// model's bands come after the requested model's.
	Band int `json:"band"`
	// Score is the strategy's metric (USD per million tokens, ms to first token, tokens per
	// second or success ratio); null when the route has none.
	Score *float64 `json:"score"`
	// Reserved marks a reserved deployment of the request's dedicated endpoint (R-KEY-6).
	Reserved bool `json:"reserved,omitempty"`
	// BYOK marks a route of the caller's own connection, deployment "byok:<id>" (R-KEY-5).
	BYOK bool `json:"byok,omitempty"`
	// Pricing is the price an attempt on the route is billed at (the model's when set,
	// R-BILL-3, else the route's), base prices in USD per million tokens; null when unpriced or
	// BYOK. PriceSource says where it comes from: config, catalog or none (docs/pricing.md).
	Pricing     *ModelPricing `json:"pricing"`
	PriceSource string        `json:"price_source"`
	// ContextWindow is the window the context-fit filter uses (the route's, else the model's,
	// else the price catalog's; 0: none) and ContextWindowSource where it comes from.
	ContextWindow       int    `json:"context_window,omitempty"`
	ContextWindowSource string `json:"context_window_source,omitempty"`
}

// billedPrice is the price an attempt on route rt of model m is billed at and its source
// (relay's priceOf, R-BILL-3): none for BYOK, the model's price when set, else the route's.
func billedPrice(m *catalog.Model, rt *catalog.Route) (*ModelPricing, string) {
	switch {
	case rt.Deployment.BYOK:
		return nil, catalog.PriceFromNone
	case m != nil && m.Price != nil:
		return pricingOf(m.Price), catalog.PriceFromConfig
	}
	return pricingOf(rt.Price), rt.PriceSource()
}

// routePlan renders the plans of a routed request (cs.plan, then cs.fallbacks).
func routePlan(cs *callState, pr *prepared) *RoutePlan {
	p := &cs.plan
	out := &RoutePlan{Model: pr.res.Requested, ResolvedModel: pr.res.Model.ID, Endpoint: p.Endpoint, Policy: p.Policy, Funding: p.Funding, Strategy: p.Strategy,
		DegradedFrom: p.DegradedFrom, SessionKey: p.SessionKey, AttemptLimit: pr.attemptLimit,
		Candidates: []RouteCandidate{}, Dropped: []plan.Dropped{}}
	if p.AttemptLimit > 0 && (out.AttemptLimit == 0 || p.AttemptLimit < out.AttemptLimit) {
		out.AttemptLimit = p.AttemptLimit
	}
	band := 0
	add := func(res *catalog.Resolution, p *plan.Plan) {
		next := band
		for _, c := range p.Candidates {
			rc := RouteCandidate{Deployment: c.Route.Deployment.Name, Provider: c.Route.Deployment.Provider,
				Platform: string(c.Route.Deployment.Platform), Model: c.Route.Model, UpstreamModel: res.UpstreamModel(c.Route), Priority: c.Route.Deployment.Priority,
				Weight: c.Route.Weight, Band: band + c.Band, Reserved: c.Reserved, BYOK: c.BYOK, Region: c.Route.Region,
				ContextWindow: c.Route.ContextWindowTokens, ContextWindowSource: c.Route.ContextWindowSource}
			rc.Pricing, rc.PriceSource = billedPrice(res.Model, c.Route)
			if rc.ContextWindow == 0 && res.Model != nil && res.Model.ContextWindowTokens > 0 {
				rc.ContextWindow = res.Model.ContextWindowTokens
			}
			if rc.Region != "" && out.Failover == nil {
				out.Failover = regionFailover()
			}
			if !math.IsNaN(c.Score) {
				sc := c.Score
				rc.Score = &sc
			}
			out.Candidates = append(out.Candidates, rc)
			next = max(next, rc.Band+1)
		}
		band = next
		out.Dropped = append(out.Dropped, p.Dropped...)
	}
	add(&pr.res, p)
	for i := range cs.fallbacks {
		add(&cs.fallbacks[i].Resolution, cs.fallbacks[i].Plan)
	}
	return out
}

// routeSurface picks the surface a POST /v1/route body names in its "surface" field.
func (s *Server) routeSurface(body []byte) (*surface, error) {
	switch v := dialect.Get(body, "surface"); {
	case !v.Exists(), v.Str == "openai":
		return s.chat, nil
	case v.Str == "anthropic":
		return s.messages, nil
	}
	return s.chat, &failure.Error{Class: failure.InvalidRequest, Param: "surface", Msg: "`surface` must be \"openai\" or \"anthropic\""}
}

// serveRoute answers POST /v1/route with the plan (R-ORDER-8) without calling any provider.
// When no route is admitted (the allowlist, a pin, context fit, circuits, disabled routes:
// issue 11 item 10) it is still a 200: empty candidates, every route dropped with its reason,
// and under "refusal" the status and class a model call would get. Other errors (an unknown
// model, a bad body, a forbidden strategy override) are answered as a model call would be.
func (s *Server) serveRoute(w http.ResponseWriter, r *http.Request) { s.serveRouteAs(w, r, nil) }

// serveRouteAs is serveRoute for caller op, or for the caller the request authenticates as
// when op is nil. The console passes the operator (consoleRoute).
func (s *Server) serveRouteAs(w http.ResponseWriter, r *http.Request, op *caller) {
	rid := requestID(w)
	cs := s.pool.Get().(*callState)
	defer s.releaseCall(cs)
	codec := relay.CodecFor(surfaceOf(r))
	var who caller
	if op != nil {
		who = *op
	} else {
		var err error
		if who, err = s.authenticate(r); err != nil {
			relay.WriteError(w, codec, rid, failure.From(err), 0, nil)
			return
		}
	}
	body, err := s.readBody(w, r, cs)
	if err != nil {
		relay.WriteError(w, codec, rid, failure.From(err), 0, nil)
		return
	}
	rp, err := s.explain(cs, who, body)
	if err != nil {
		if sf, _ := s.routeSurface(body); sf != nil {
			codec = sf.codec
		}
		relay.WriteError(w, codec, rid, failure.From(err), 0, nil)
		return
	}
	b, err := json.Marshal(rp)
	if err != nil {
		relay.WriteError(w, codec, rid, &failure.Error{Class: failure.UpstreamError, Msg: "internal error"}, 0, nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (s *Server) explain(cs *callState, who caller, body []byte) (*RoutePlan, error) {
	sf, err := s.routeSurface(body)
	if err != nil {
		return nil, err
	}
	var pr prepared
	err = s.route(cs, who, sf, body, &pr)
	if err != nil && pr.refused && pr.refusedModel.Model != nil {
		// Refused before planning (allowlist, pin against the key's providers): every route of
		// the model is dropped with that reason.
		res := &pr.refusedModel
		rp := &RoutePlan{Model: res.Requested, ResolvedModel: res.Model.ID, Strategy: s.strategy,
			Candidates: []RouteCandidate{}, Dropped: []plan.Dropped{}, Refusal: refusalOf(failure.From(err))}
		if rp.Strategy == "" {
			rp.Strategy = plan.StrategyPrice
		}
		if res.Endpoint != nil {
			rp.Endpoint = res.Endpoint.ID
		}
		for _, rt := range res.Model.Routes {
			rp.Dropped = append(rp.Dropped, plan.Dropped{Deployment: rt.Deployment.Name, Model: rt.Model, Reason: pr.refusedReason})
		}
		return rp, nil
	}
	if pr.res.Model == nil {
		return nil, err
	}
	rp := routePlan(cs, &pr)
	s.namePauses(rp.Dropped)
	clear(cs.fallbacks)
	if err != nil {
		if !pr.refused {
			return nil, err
		}
		// No route admitted (issue 11 item 10): the plan with its drops, and the refusal.
		rp.Refusal = refusalOf(failure.From(err))
	}
	return rp, nil
}

// Explain returns the plan of body (a POST /v1/route body) for a gateway built from cfg and
// cat that has served nothing yet (every circuit closed, no measurements): what
// `switchyard route` prints. key names a configured key whose allow_request_override and
// account apply; "" is the operator: it may override the strategy and use every dedicated
// endpoint whatever its accounts. The error is the *failure.Error a
// request would get (an unknown model, an empty pool, ...) or an unknown key name.
func Explain(cfg *config.Config, cat *catalog.Catalog, key string, body []byte) (*RoutePlan, error) {
	s := &Server{cat: cat, routable: new(routableState), byok: new(byokSet), strategy: cfg.Routing.Strategy, attemptLimit: max(cfg.Routing.AttemptLimit, 0),
		blend:    plan.Blend{Input: cfg.Routing.PriceBlend.Input, Output: cfg.Routing.PriceBlend.Output},
		chat:     &surface{catalog.OpenAI, SurfaceChat, catalog.ProtocolModel, relay.CodecFor(catalog.OpenAI), false},
		messages: &surface{catalog.Anthropic, SurfaceMessages, catalog.ProtocolModel, relay.CodecFor(catalog.Anthropic), false}}
	cs := circuit.Settings{Failures: cfg.Routing.Circuit.Failures, Cooldown: cfg.Routing.Circuit.Cooldown.D()}
	s.circuits = circuit.NewSet(cs, cs)
	who := caller{allowOverride: true, anyEndpoint: true}
	if key != "" {
		found := false
		for _, k := range cfg.Keys {
			if k.Name == key {
				who, found = caller{key: k.Name, account: k.Account, allowOverride: k.AllowRequestOverride}, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("no key named %q in the configuration", key)
		}
	}
	return s.explain(new(callState), who, body)
}

// namePauses renames, in a POST /v1/route answer, the routes dropped as "circuit open" whose
// provider is paused after an upstream 429 to plan.ReasonProviderPaused, the same fact the
// audit's admission event names provider_paused (issue 25 item 5). The plan itself keeps one
// reason for both; only the answer an operator reads tells them apart.
func (s *Server) namePauses(ds []plan.Dropped) {
	for i := range ds {
		d := &ds[i]
		if d.Reason != plan.ReasonCircuitOpen {
			continue
		}
		scope := d.Deployment
		if dep := s.cat.Deployment(d.Deployment); dep != nil {
			scope = dep.PauseScope()
		}
		if errors.Is(s.circuits.Blocked(scope, d.Deployment, d.Model), circuit.ErrPaused) {
			d.Reason = plan.ReasonProviderPaused
		}
	}
}
