package plan

import (
	"fmt"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Reasons a route is dropped from the pool, as shown in plans. A route carries the reason of the
// first filter it fails, in the order of R-ADMIT: the key's providers, pin, only, ignore, the
// key's tier scope, context, protocol, circuit.
// Before those, a reserved route that the request may not use (R-KEY-6) is dropped as
// ReasonReserved, and a public route of an endpoint without public fallback as
// ReasonNoPublicFallback: neither belongs to the request's pool at all, so neither names the
// constraint that emptied it.
const (
	ReasonFunding          = "not funded by the policy" // a house route, and the caller's routing policy's funding is byok (R-POLICY)
	ReasonCredit           = "insufficient credit"      // a house route, removed after planning: the prepaid balance cannot cover it, and the caller's own connections serve (server)
	ReasonReserved         = "reserved"                 // a reserved deployment, and the request is not through an endpoint listing it (R-KEY-6)
	ReasonNoPublicFallback = "public fallback off"      // a public deployment, and the request's endpoint has public_fallback false (R-KEY-6)

	ReasonProviders = "not in the key's providers" // the effective `providers` setting does not name it (R-ADMIT-2)
	// ReasonModels: the model is outside the key's effective models allowlist (R-ADMIT-1):
	// the request is refused before planning, so only POST /v1/route shows it, on every route.
	ReasonModels      = "not in the key's models"
	ReasonPin         = "not the pinned provider"  // a `model:provider` pin names another provider (R-SUFFIX-1)
	ReasonOnly        = "not in provider.only"     // provider.only does not name it (R-ORDER-6)
	ReasonIgnore      = "in provider.ignore"       // provider.ignore names it (R-ORDER-6)
	ReasonTierScope   = "outside the tier scope"   // the deployment's tier is outside the effective tier_scope (R-ADMIT-3)
	ReasonContext     = "context window too small" // the input estimate reaches the window (R-ADMIT-4)
	ReasonProtocol    = "protocol not served"      // the deployment's dialect has no endpoint for the request's protocol (R-ADMIT-5)
	ReasonCircuitOpen = "circuit open"             // the deployment's or (deployment, model) circuit is open, or its provider is paused
	// ReasonProviderPaused: POST /v1/route's name for a ReasonCircuitOpen drop whose provider is
	// paused after an upstream 429 (R-CIRCUIT-4), as the audit's provider_paused event says. The
	// planner itself records ReasonCircuitOpen for both.
	ReasonProviderPaused = "provider paused"
	// ReasonDisabled: an operator took the deployment or the route out of routing (config
	// disabled: true, or the admin API's live override; issue 11 item 3). It is checked before
	// every other filter of a route the request may use.
	ReasonDisabled = "disabled"
)

// rank orders the reasons as the filters run; the highest rank among the dropped routes is the
// filter that emptied the pool.
func rank(reason string) int {
	switch reason {
	case ReasonFunding:
		return 1
	case ReasonProviders:
		return 2
	case ReasonPin:
		return 3
	case ReasonOnly:
		return 4
	case ReasonIgnore:
		return 5
	case ReasonTierScope:
		return 6
	case ReasonContext:
		return 7
	case ReasonProtocol:
		return 8
	case ReasonDisabled: // checked first, ranked late: the pool would serve but for the operator
		return 9
	case ReasonCircuitOpen:
		return 10
	}
	return 0
}

// publicRank is Candidate.rsv of a public route: after every reserved route.
const publicRank = 1 << 30

// admit runs the admission filters over the request's routes: for a dedicated endpoint
// (R-KEY-6) its reserved routes first, in the endpoint's order, then the caller's own
// connections' routes (in.BYOK), then the model's routes in catalog order. Under funding byok
// (in.HouseOff) every house route is dropped as ReasonFunding. Otherwise reserved routes the request may not use and, for an endpoint without
// public fallback, public routes are dropped without further checks. Admitted routes are
// appended to p.Candidates (their metric still unset), the others to p.Dropped.
func admit(p *Plan, m *catalog.Model, in *Input, h Health) {
	e := in.Resolution.Endpoint
	if e != nil {
		for i, rt := range e.Reserved {
			if in.HouseOff {
				p.Dropped = append(p.Dropped, Dropped{Deployment: rt.Deployment.Name, Model: rt.Model, Reason: ReasonFunding})
				continue
			}
			admitRoute(p, rt, m, in, h, int32(i))
		}
	}
	for _, rt := range in.BYOK {
		admitRoute(p, rt, m, in, h, publicRank)
	}
	for _, rt := range m.Routes {
		switch {
		case in.HouseOff && !(rt.Deployment.Reserved && e != nil && e.Lists(rt)):
			p.Dropped = append(p.Dropped, Dropped{Deployment: rt.Deployment.Name, Model: rt.Model, Reason: ReasonFunding})
		case rt.Deployment.Reserved && e != nil && e.Lists(rt):
			continue // admitted above, in the endpoint's order
		case rt.Deployment.Reserved:
			p.Dropped = append(p.Dropped, Dropped{Deployment: rt.Deployment.Name, Model: rt.Model, Reason: ReasonReserved})
		case e != nil && !e.PublicFallback:
			p.Dropped = append(p.Dropped, Dropped{Deployment: rt.Deployment.Name, Model: rt.Model, Reason: ReasonNoPublicFallback})
		default:
			admitRoute(p, rt, m, in, h, publicRank)
		}
	}
}

// admitRoute runs the admission filters of R-ADMIT over one route; rsv is the candidate's
// reserved rank (its index in the endpoint, or publicRank).
func admitRoute(p *Plan, rt *catalog.Route, m *catalog.Model, in *Input, h Health, rsv int32) {
	pr := &in.Prefs
	dep := rt.Deployment
	reason := ""
	switch {
	case rt.Deployment.Disabled && in.Routable == nil, rt.Disabled && in.Routable == nil,
		in.Routable != nil && in.Routable.Disabled(rt):
		reason = ReasonDisabled
	case len(in.Providers) > 0 && index(in.Providers, dep) < 0:
		reason = ReasonProviders
	case pr.Pin != "" && !matches(pr.Pin, dep):
		reason = ReasonPin
	case len(pr.Only) > 0 && index(pr.Only, dep) < 0:
		reason = ReasonOnly
	case len(pr.Ignore) > 0 && index(pr.Ignore, dep) >= 0:
		reason = ReasonIgnore
	case !dep.BYOK && !inScope(in.TierScope, dep.Tier): // a caller's own connection is outside the house's tiers
		reason = ReasonTierScope
	case !fits(in.InputTokens, rt, m):
		reason = ReasonContext
	case !dep.Supports(in.Protocol):
		reason = ReasonProtocol
	case h != nil && h.Open(dep.PauseScope(), dep.Name, rt.Model):
		reason = ReasonCircuitOpen
	}
	if reason != "" {
		p.Dropped = append(p.Dropped, Dropped{Deployment: dep.Name, Model: rt.Model, Reason: reason})
		return
	}
	p.Candidates = append(p.Candidates, Candidate{Route: rt, rsv: rsv})
}

// fits reports whether an input of n tokens fits the route's context window (the route's own,
// else the model's): it is admitted when the estimate falls short of the window (R-ADMIT-4). A
// zero estimate or a zero window admits.
func fits(n int, rt *catalog.Route, m *catalog.Model) bool {
	w := rt.ContextWindowTokens
	if w == 0 {
		w = m.ContextWindowTokens
	}
	return n <= 0 || w <= 0 || n < w
}

// inScope reports whether a deployment of supply tier is within tier scope (R-ADMIT-3, R-KEY-3):
// "" and "all" admit every tier; "official" and "value" admit only their own tier, so a
// deployment without a tier is outside both.
func inScope(scope, tier string) bool {
	return scope == "" || scope == "all" || scope == tier
}

// matches reports whether name is the deployment's provider or its name.
func matches(name string, d *catalog.Deployment) bool {
	return name == d.Provider || name == d.Name
}

// index returns the index of the first name in names matching d, or -1.
func index(names []string, d *catalog.Deployment) int {
	for i, n := range names {
		if matches(n, d) {
			return i
		}
	}
	return -1
}

// Refusal is the error for an empty pool (R-ADMIT), named after the filter that emptied it —
// the last filter, in admission order, that dropped a route:
//
//   - a circuit: 503 gateway_error "all deployments cooling down" ([CoolingDown]);
//   - an operator's disabled state: 503 gateway_error naming the model, no retry-after;
//   - the protocol: 400 invalid_request, no deployment serves this endpoint;
//   - context fit: 400 context_overflow;
//   - the tier scope: 400 invalid_request naming settings.tier_scope;
//   - provider.ignore, provider.only or the pin: 400 invalid_request naming it;
//   - the key's providers: 400 invalid_request naming settings.providers;
//   - a policy funded byok and no connection of the key serving the model: 400
//     invalid_request naming settings.policy;
//   - a model without routes, or none the request may use (reserved routes of a public
//     request, public routes of an endpoint without public fallback): 400 invalid_request.
//
// An unknown strategy is a 400 invalid_request whatever the pool. The pool is never silently
// widened. Refusal returns nil when the plan has candidates.
func (p *Plan) Refusal() error {
	if p.badStrategy {
		return &failure.Error{Class: failure.InvalidRequest, Msg: fmt.Sprintf("unknown routing strategy %q", p.Strategy)}
	}
	if len(p.Candidates) > 0 {
		return nil
	}
	top := 0
	for _, d := range p.Dropped {
		top = max(top, rank(d.Reason))
	}
	switch top {
	case 0:
		return &failure.Error{Class: failure.InvalidRequest, Param: "model",
			Msg: fmt.Sprintf("no deployment serves model %q", p.Model)}
	case rank(ReasonFunding):
		return &failure.Error{Class: failure.InvalidRequest, Param: "settings.policy",
			Msg: fmt.Sprintf("no BYOK connection of this API key serves model %q, and its routing policy's funding is byok", p.Model)}
	case rank(ReasonProviders):
		return &failure.Error{Class: failure.InvalidRequest, Param: "settings.providers",
			Msg: fmt.Sprintf("this API key's providers setting excludes every deployment of model %q", p.Model)}
	case rank(ReasonTierScope):
		return &failure.Error{Class: failure.InvalidRequest, Param: "settings.tier_scope",
			Msg: fmt.Sprintf("this API key's tier_scope excludes every deployment of model %q", p.Model)}
	case rank(ReasonPin):
		return &failure.Error{Class: failure.InvalidRequest, Param: "model",
			Msg: fmt.Sprintf("no deployment of provider %q serves model %q", p.pin, p.Model)}
	case rank(ReasonOnly):
		return &failure.Error{Class: failure.InvalidRequest, Param: "provider.only",
			Msg: fmt.Sprintf("provider.only excludes every deployment of model %q", p.Model)}
	case rank(ReasonIgnore):
		return &failure.Error{Class: failure.InvalidRequest, Param: "provider.ignore",
			Msg: fmt.Sprintf("provider.ignore excludes every deployment of model %q", p.Model)}
	case rank(ReasonContext):
		return &failure.Error{Class: failure.ContextOverflow, Param: "messages",
			Msg: fmt.Sprintf("the request (about %d input tokens) does not fit the context window of any deployment of model %q", p.inputTokens, p.Model)}
	case rank(ReasonProtocol):
		return &failure.Error{Class: failure.InvalidRequest, Param: "model",
			Msg: fmt.Sprintf("no deployment of model %q serves this endpoint", p.Model)}
	case rank(ReasonDisabled):
		return &failure.Error{Class: failure.GatewayError,
			Msg: fmt.Sprintf("every deployment of model %q that could serve this request is disabled by the operator", p.Model)}
	}
	return CoolingDown() // some route will be back
}

// CoolingDown is the R-CIRCUIT-6 refusal: 503, retry-after 5 s, limit kind health.
func CoolingDown() error {
	return &failure.Error{Class: failure.GatewayError, Msg: MsgCoolingDown, RetryAfter: 5 * time.Second, LimitKind: "health"}
}

// MsgCoolingDown is the fixed message of R-CIRCUIT-6.
const MsgCoolingDown = "all deployments cooling down"
