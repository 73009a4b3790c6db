package server

import (
	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/relay"
)

// planCall is the plan step of a model call, its one entry (docs/architecture-notes.md): the
// plan of the requested model into cs.plan and one plan per fallback model into cs.fallbacks
// (R-FAIL-8), each built with the caller's own connections (BYOK, R-KEY-5) already merged into
// its pool, under the caller's routing policy (R-POLICY: saved order, funding, attempt limit),
// strategy, providers and tier scope (R-KEY-2, R-ADMIT-2/3). ask is what resolveCall read; pr
// gets the attempt limit and pr.planned. It returns the refusal of a request no candidate of
// any plan can serve (Plan.Refusal, pr.refused), or a fallback model the caller may not use.
func (s *Server) planCall(cs *callState, who caller, sf *surface, pr *prepared, ask *asked) error {
	cr := s.routingOf(who) // the caller's routing policy and BYOK connections (R-POLICY)
	pr.attemptLimit = s.attemptLimit
	if cr.policy != nil && cr.policy.AttemptLimit > 0 && (pr.attemptLimit == 0 || cr.policy.AttemptLimit < pr.attemptLimit) {
		pr.attemptLimit = cr.policy.AttemptLimit // the stricter of routing.attempt_limit and the policy's
	}
	sx, h := &ask.sx, &ask.h
	in := s.planInput(who, sf, pr.res, ask, &cr)
	s.buildPlan(cs, &cs.plan, &in, cr.conns)
	cs.fallbacks = cs.fallbacks[:0]
	pr.planned = true
	// A pinned request never switches provider (R-SUFFIX-1), and allow_fallbacks false tries
	// one candidate only (R-ORDER-6): neither runs fallback models.
	noSwitch := sx.Pin != "" || (h.prefs.AllowFallbacks != nil && !*h.prefs.AllowFallbacks)
	if noSwitch || len(h.fallbacks) == 0 {
		err := cs.plan.Refusal()
		pr.refused = err != nil
		return err
	}
	for len(cs.fbPlans) < len(h.fallbacks) {
		cs.fbPlans = append(cs.fbPlans, new(plan.Plan))
	}
	for i, id := range h.fallbacks {
		if id == pr.info.Model {
			continue
		}
		fres, err := s.cat.Resolve(id)
		if err == nil && s.hidden(id, who) {
			err = catalog.UnknownModel(id)
		}
		if err == nil {
			err = allowModel(who, fres, "models")
		}
		if err != nil {
			fe := *failure.From(err)
			fe.Param = "models"
			return &fe
		}
		in.Resolution = fres
		fp := cs.fbPlans[i]
		s.buildPlan(cs, fp, &in, cr.conns)
		// A fallback that resolves to routes already planned (an alias, or an endpoint of the same
		// model) does not try them again: each route is tried at most once per request.
		kept := fp.Candidates[:0]
		for _, c := range fp.Candidates {
			if !planned(&cs.plan, cs.fallbacks, c.Route) {
				kept = append(kept, c)
			}
		}
		fp.Candidates = kept
		cs.fallbacks = append(cs.fallbacks, relay.Fallback{Resolution: fres, Plan: fp})
	}
	if len(cs.plan.Candidates) > 0 {
		return nil
	}
	for _, fb := range cs.fallbacks {
		if len(fb.Plan.Candidates) > 0 {
			return nil // the requested model has no candidate now; its fallbacks run (R-FAIL-8)
		}
	}
	err := cs.plan.Refusal()
	pr.refused = err != nil
	return err
}

// planInput is the plan input of the requested model res: the gateway's strategy unless the
// caller's settings or the model's :@strategy suffix set one (R-SUFFIX-2), the caller's
// preferred providers, providers and tier scope (R-KEY-2, R-ADMIT-2/3), the hints, and the
// routing policy's funding and saved order (R-POLICY). Its BYOK routes are set by buildPlan.
func (s *Server) planInput(who caller, sf *surface, res catalog.Resolution, ask *asked, cr *callerRouting) plan.Input {
	h := &ask.h
	strategy := s.strategy
	var providers []string
	var scope string
	if e := who.settings; e != nil { // a stored key's effective settings (R-KEY-2, R-ADMIT-2/3)
		if e.Strategy.Value != "" {
			strategy = e.Strategy.Value
		}
		h.prefs.Preferred = e.PreferredProviders.Value
		providers, scope = e.Providers.Value, string(e.TierScope.Value)
	}
	if ask.sx.Strategy != "" {
		strategy = ask.sx.Strategy
	}
	h.prefs.Pin = ask.sx.Pin
	in := plan.Input{Resolution: res, Surface: sf.dialect, Protocol: sf.protocol, Blend: s.blend,
		Strategy: strategy, SessionKey: h.sessionKey, Prefs: h.prefs, InputTokens: h.inputTokens,
		Providers: providers, TierScope: scope, Funding: string(cr.funding), HouseOff: cr.funding == accounts.FundingBYOK,
		Routable: s.routable}
	if cr.policy != nil {
		in.Policy, in.SavedOrder = cr.policy.ID, cr.policy.Order
	}
	if s.stats != nil {
		in.Stats = s.stats
	}
	return in
}

// buildPlan builds p for in.Resolution's model with the routes of the caller's connections
// conns that serve it merged into the pool (R-KEY-5): the one place a plan is built for a call.
func (s *Server) buildPlan(cs *callState, p *plan.Plan, in *plan.Input, conns []accounts.Connection) {
	cs.byok = s.byokRoutes(cs.byok[:0], conns, in.Resolution.Model)
	in.BYOK = cs.byok
	plan.Build(p, *in, s.circuits)
}

// callerRouting is what a caller's routing policy and connections add to its plans (R-POLICY,
// R-ORDER-7): the saved order, the funding rule, the attempt limit, and the connections whose
// routes join the pool.
type callerRouting struct {
	policy  *accounts.Policy // nil: no policy
	funding accounts.Funding // "" when neither a policy nor a connection applies
	conns   []accounts.Connection
}

// routingOf reads the caller's policy (its effective settings.policy, from the key cache) and
// its active connections. Without a policy, a key's connections are tried first and the
// house's deployments after them (byok_with_house_fallback; docs/routing.md); a policy funded
// house leaves them unused. A policy id that is not in the cache (the policy is stored on
// another replica and not reloaded yet) routes as no policy.
func (s *Server) routingOf(who caller) callerRouting {
	var cr callerRouting
	if s.cache == nil || who.settings == nil {
		return cr
	}
	if id := who.settings.Policy.Value; id != "" {
		cr.policy, _ = s.cache.Policy(id)
	}
	if cr.policy != nil {
		cr.funding = cr.policy.Funding
	}
	if cr.funding != accounts.FundingHouse {
		cr.conns = s.cache.Connections(who.keyID)
		if cr.funding == "" && len(cr.conns) > 0 {
			cr.funding = accounts.FundingBYOKWithHouseFallback
		}
	}
	return cr
}

// byokRoutes appends to dst the routes of the caller's connections that serve model m.
func (s *Server) byokRoutes(dst []*catalog.Route, conns []accounts.Connection, m *catalog.Model) []*catalog.Route {
	for i := range conns {
		if rt := s.byokDeployment(&conns[i]).routes[m.ID]; rt != nil {
			dst = append(dst, rt)
		}
	}
	return dst
}

// planned reports whether route rt is already a candidate of the requested model's plan or of
// an earlier fallback's.
func planned(p *plan.Plan, fbs []relay.Fallback, rt *catalog.Route) bool {
	for _, c := range p.Candidates {
		if c.Route == rt {
			return true
		}
	}
	for _, fb := range fbs {
		for _, c := range fb.Plan.Candidates {
			if c.Route == rt {
				return true
			}
		}
	}
	return false
}
