package plan

import (
	"slices"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// Health reports whether routing must drop a route now (R-ADMIT-7). circuit.Set satisfies it.
type Health interface {
	Open(provider, deployment, model string) bool
}

// Stats is what ordering reads of the 24-hour statistics of a route (R-ORDER-4); stats.Collector
// satisfies it. ok is false when nothing is known of the route.
type Stats interface {
	Route(deployment, model string) (RouteStats, bool)
}

// RouteStats are a route's measurements over the window, each with the number of requests that
// produced it. A metric whose sample count is below [MinSamples] is treated as missing.
type RouteStats struct {
	// TTFTMillis is the mean time to first token of successful requests, in milliseconds.
	TTFTMillis  float64
	TTFTSamples int
	// TokensPerSec is the output tokens per second of successful requests (after the first token).
	TokensPerSec      float64
	ThroughputSamples int
	// SuccessRatio is successes / (successes + provider-caused failures), 0..1; client-caused
	// errors are excluded from the denominator (R-ORDER-4). Samples is that denominator.
	SuccessRatio float64
	Samples      int
}

// Candidate is one admitted route, in the order it will be tried.
type Candidate struct {
	Route *catalog.Route
	// Score is the strategy's metric: blended price in USD per million tokens (price), mean
	// milliseconds to first token (latency), output tokens per second (throughput) or success
	// ratio 0..1 (reliability). It is NaN when the route has none: unpriced, too few samples
	// (the route was placed at the median), or a strategy without a metric (balanced, priority).
	Score float64
	// Band is the 0-based index of the candidate's tie band (R-ORDER-3); bands only grow along
	// the plan.
	Band int
	// Weight is the route's weight among equals (catalog.Route.Weight).
	Weight float64
	// Reserved is true for a reserved route of the request's dedicated endpoint (R-KEY-6):
	// such routes come first, in the endpoint's order, one band each.
	Reserved bool
	// BYOK is true for a route of the caller's own connection (Input.BYOK).
	BYOK bool

	key    float64 // ascending sort key of the metric (imputed when missing)
	metric float64 // the metric used for banding (imputed when missing)
	draw   float64 // -ln(u)/weight: the weighted random order inside a band (affinity.go)
	group  int32   // provider.order index, then preferred, then the rest
	rsv    int32   // reserved rank: index in the endpoint's reserved routes, publicRank for a public route (R-KEY-6)
	house  bool    // a house route: after every BYOK route (R-POLICY funding; policy.go)
	saved  int32   // index in Input.SavedOrder, len(SavedOrder) when it names none (R-ORDER-7; policy.go)
	nokey  bool    // no metric at all (unpriced): after every route that has one
}

// Dropped is a route that did not enter the pool, with the reason (one of the Reason constants).
type Dropped struct {
	Deployment string `json:"deployment"`
	Model      string `json:"model"`
	Reason     string `json:"reason"`
}

// Plan is the ordered candidates and the dropped routes of one request (R-ORDER-8). The same
// object drives the attempt loop and answers POST /v1/route; see MarshalJSON for its JSON form.
type Plan struct {
	Model    string // the caller's model string
	Resolved string // the catalog model id
	// Endpoint is the dedicated endpoint the caller named (R-KEY-6); "" for a model request.
	Endpoint string
	// Policy and Funding are the caller's routing policy id and its funding rule (R-POLICY),
	// copied from Input for display; "" when no policy applies.
	Policy, Funding string
	// Strategy is the strategy that ordered the pool; "balanced" when the requested one had no
	// measurements, which DegradedFrom then names (R-ORDER-4).
	Strategy     string
	DegradedFrom string
	// SessionKey is the key that seeded the order inside bands; "" means a fresh random seed.
	SessionKey string
	Protocol   catalog.Protocol
	// AttemptLimit caps the attempts made on this plan; 0 means no cap beyond the candidates.
	// It is 1 when the request set provider.allow_fallbacks to false.
	AttemptLimit int
	Candidates   []Candidate
	Dropped      []Dropped

	perm        []int32     // sort scratch, reused: the order as indexes into Candidates
	tmp         []Candidate // sort scratch, reused: a copy of Candidates while permuting
	inputTokens int         // for the context_overflow refusal
	pin         string      // for the pin refusal
	badStrategy bool        // Strategy names no strategy
}

// Input is what a plan is built from.
type Input struct {
	Resolution catalog.Resolution
	// Surface is the caller's dialect (every route can serve it, through translation when the
	// deployment speaks the other dialect).
	Surface catalog.Dialect
	// Protocol is what the request asks for; deployments that cannot serve it are dropped.
	Protocol catalog.Protocol
	Blend    Blend
	// Strategy orders the pool: price (default when ""), latency, throughput, reliability,
	// balanced or priority (R-ORDER-1). Prefs.Sort, when set, takes its place.
	Strategy string
	// SessionKey seeds the weighted random order inside tie bands (R-ORDER-5); "" draws a fresh
	// random seed.
	SessionKey string
	// Prefs are the request's provider preferences and pin (R-ORDER-6, R-SUFFIX-1).
	Prefs Preferences
	// Providers is the caller's effective pinned-provider list (settings `providers`, R-ADMIT-2):
	// routes of deployments it does not name (by provider or name) are dropped first. nil or
	// empty is no restriction.
	Providers []string
	// TierScope is the caller's effective supply-tier scope (settings `tier_scope`, R-ADMIT-3):
	// "official" or "value" drops the deployments of any other tier (an untiered one included);
	// "" and "all" drop nothing.
	TierScope string
	// InputTokens is the request's estimated input size in tokens for the context-fit filter
	// (R-ADMIT-4); 0 skips the filter.
	InputTokens int
	// Stats feeds the latency, throughput and reliability strategies; nil means no
	// measurements (those strategies then degrade to balanced).
	Stats Stats
	// BYOK are the routes of the caller's own provider connections serving the model (R-KEY-5,
	// deployments "byok:<id>" with Deployment.BYOK set), admitted after an endpoint's reserved
	// routes and before the model's routes, and ordered before every house route. nil: none.
	BYOK []*catalog.Route
	// HouseOff drops the model's own (house) routes with ReasonFunding: a routing policy whose
	// funding is byok (R-POLICY). An endpoint's reserved routes are house routes too.
	HouseOff bool
	// SavedOrder is the caller's routing policy's saved order (R-ORDER-7): deployment or
	// provider names whose routes go first, in this order, inside the BYOK and the house
	// routes each, ahead of provider.order and the preferred split. nil: no policy order.
	SavedOrder []string
	// Policy and Funding name the policy and its funding rule in the plan (display only).
	Policy, Funding string
	// Routable tells which routes an operator took out of routing (ReasonDisabled, issue 11
	// item 3): the catalog's disabled flags with the live overrides on top. nil reads the
	// catalog's flags (Deployment.Disabled, Route.Disabled) alone.
	Routable Routable
}

// Routable is the operator's routable state of the catalog's routes.
type Routable interface {
	// Disabled reports whether rt is out of routing now.
	Disabled(rt *catalog.Route) bool
}

// Preferences narrow or reorder the pool; they never widen it (R-ORDER-6, R-SUFFIX-4). Names
// match a deployment's provider or its name, exactly (contract.md).
type Preferences struct {
	Order  []string // these go first, in this order
	Only   []string // the pool narrows to these
	Ignore []string // these leave the pool
	// AllowFallbacks false makes one attempt only (Plan.AttemptLimit 1); nil means true.
	AllowFallbacks *bool
	// Sort is a strategy override from the request's provider.sort (subject to the key's
	// allow_request_override, checked before planning).
	Sort string
	// Pin is the provider of a `model:provider` suffix: the pool becomes its routes only.
	Pin string
	// Preferred is a key's or account's preferred-provider set: preferred first, then the rest.
	// A set matching none or all of the pool changes nothing.
	Preferred []string
}

// Build fills p (reusing its slices, so a Plan reused across requests allocates nothing once
// grown) with the plan for in. Admission drops routes with a reason (see the package doc);
// the rest are ordered by provider.order, the preferred split, then the strategy with its tie
// bands and the session's weighted random order. For a dedicated endpoint
// (in.Resolution.Endpoint, R-KEY-6) the admitted reserved routes come before all of that, in
// the endpoint's order, one band each. An unknown strategy leaves the plan empty,
// and Refusal reports it. Build never fails otherwise: check Refusal for an empty pool.
func Build(p *Plan, in Input, h Health) {
	m := in.Resolution.Model
	name := in.Prefs.Sort
	if name == "" {
		name = in.Strategy
	}
	if name == "" {
		name = StrategyPrice
	}
	*p = Plan{Model: in.Resolution.Requested, Strategy: name, SessionKey: in.SessionKey, Protocol: in.Protocol,
		Candidates: p.Candidates[:0], Dropped: p.Dropped[:0], perm: p.perm, tmp: p.tmp, inputTokens: in.InputTokens, pin: in.Prefs.Pin}
	s, ok := parseStrategy(name)
	if !ok {
		p.badStrategy = true
		return
	}
	if m == nil {
		return
	}
	p.Resolved, p.Policy, p.Funding = m.ID, in.Policy, in.Funding
	if e := in.Resolution.Endpoint; e != nil {
		p.Endpoint = e.ID
	}
	admit(p, m, &in, h)
	if len(p.Candidates) == 0 {
		return
	}
	if s = measure(p.Candidates, s, &in); s.name != name {
		p.Strategy, p.DegradedFrom = s.name, name
	}
	seed := seedOf(in.SessionKey)
	for i := range p.Candidates {
		c := &p.Candidates[i]
		c.Weight, c.Reserved, c.BYOK = c.Route.Weight, c.rsv != publicRank, c.Route.Deployment.BYOK
		c.draw = drawKey(seed, c.Route)
		c.house, c.saved = !c.BYOK, savedRank(c.Route.Deployment, in.SavedOrder)
	}
	group(p.Candidates, &in.Prefs)
	p.sort(s.compare)
	if band(p.Candidates, s) {
		p.sort(byBand)
	}
	if af := in.Prefs.AllowFallbacks; af != nil && !*af {
		// The plan still lists every candidate (contract.md: it "states attempt_limit when one
		// applies"); the relay makes one attempt.
		p.AttemptLimit = 1
	}
}

// sort orders p.Candidates by cmp, stably. It sorts indexes and then permutes once, which is
// several times faster than swapping the candidates themselves.
func (p *Plan) sort(cmp func(a, b *Candidate) int) {
	cs := p.Candidates
	p.perm = p.perm[:0]
	for i := range cs {
		p.perm = append(p.perm, int32(i))
	}
	slices.SortFunc(p.perm, func(i, j int32) int {
		if c := cmp(&cs[i], &cs[j]); c != 0 {
			return c
		}
		return int(i - j)
	})
	p.tmp = append(p.tmp[:0], cs...)
	for k, i := range p.perm {
		cs[k] = p.tmp[i]
	}
	clear(p.tmp) // drop the route pointers
}
