// Package plan builds the ordered list of candidate routes for one request (R-ADMIT, R-ORDER):
// admission filters drop routes with a reason, the strategy orders the rest. It is pure: no I/O,
// no net/http, no clock; health comes in through the Health interface declared here.
//
// This is the core's plan: the price strategy (R-ORDER-2) with priority and catalog order
// breaking ties, and the circuit filter. Routes of either dialect are admitted: the relay
// translates (R-DIALECT-2, R-ADMIT-5). The routing issue adds the
// remaining strategies, tie bands, affinity, preferences and suffixes on the same Plan object.
package plan

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Reasons a route is dropped from the pool, as shown in plans.
const (
	ReasonCircuitOpen = "circuit open"        // the deployment's or (deployment, model) circuit is open, or its provider is paused
	ReasonProtocol    = "protocol not served" // the deployment's dialect has no endpoint for the request's protocol (R-ADMIT-5)
)

// Health reports whether routing must drop a route now (R-ADMIT-7). circuit.Set satisfies it.
type Health interface {
	Open(provider, deployment, model string) bool
}

// Blend weighs input and output prices for the price strategy (R-ORDER-2): score =
// Input x input price + Output x output price, in USD per million tokens. Zero means 3:1.
type Blend struct{ Input, Output float64 }

// Candidate is one admitted route, in the order it will be tried.
type Candidate struct {
	Route *catalog.Route
	// Score is the strategy's metric: the blended price in USD per million tokens; NaN when unpriced.
	Score float64
	// Band is the 0-based tie band (every candidate is its own band until the routing issue adds tolerances).
	Band int
}

// Dropped is a route that did not enter the pool, with the reason.
type Dropped struct {
	Deployment string `json:"deployment"`
	Model      string `json:"model"`
	Reason     string `json:"reason"`
}

// Plan is the ordered candidates and the dropped routes of one request (R-ORDER-8). The same
// object drives the attempt loop and answers POST /v1/route.
type Plan struct {
	Model      string // the caller's model string
	Resolved   string // the catalog model id
	Strategy   string
	Protocol   catalog.Protocol
	Candidates []Candidate
	Dropped    []Dropped
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
	// balanced or priority (R-ORDER-1).
	Strategy string
	// SessionKey seeds the weighted random order inside tie bands (R-ORDER-5); "" draws a fresh
	// random seed.
	SessionKey string
	// Prefs are the request's provider preferences and pin (R-ORDER-6, R-SUFFIX-1).
	Prefs Preferences
	// InputTokens is the request's estimated input size in tokens for the context-fit filter
	// (R-ADMIT-4); 0 skips the filter.
	InputTokens int
}

// Preferences narrow or reorder the pool; they never widen it (R-ORDER-6, R-SUFFIX-4). Names
// match a deployment's provider or its name (contract.md).
type Preferences struct {
	Order  []string // these go first, in this order
	Only   []string // the pool narrows to these
	Ignore []string // these leave the pool
	// AllowFallbacks false tries only the first candidate.
	AllowFallbacks *bool
	// Sort is a strategy override from the request's provider.sort (subject to the key's
	// allow_request_override, checked before planning).
	Sort string
	// Pin is the provider of a `model:provider` suffix: the pool becomes its routes only.
	Pin string
	// Preferred is a key's or account's preferred-provider set: preferred first, then the rest.
	Preferred []string
}

// Stats is what ordering reads of the 24-hour statistics of a route (R-ORDER-4); the stats
// package satisfies it.
type Stats interface {
	Route(deployment, model string) (RouteStats, bool)
}

// RouteStats are a route's measurements over the window. Samples counts the requests that
// produced them (client-caused errors excluded).
type RouteStats struct {
	TTFTMillis   float64 // time to first token, milliseconds
	TokensPerSec float64 // output tokens per second
	SuccessRatio float64 // 0..1
	Samples      int
}

// Build fills p (reusing its slices) with the plan for in. Routes are admitted when health does
// not report them open; the admitted ones are
// ordered by blended price, unpriced last, then by ascending deployment priority, then catalog
// order (a stable sort).
func Build(p *Plan, in Input, h Health) {
	m := in.Resolution.Model
	*p = Plan{Model: in.Resolution.Requested, Resolved: m.ID, Strategy: "price", Protocol: in.Protocol,
		Candidates: p.Candidates[:0], Dropped: p.Dropped[:0]}
	bi, bo := in.Blend.Input, in.Blend.Output
	if bi == 0 && bo == 0 {
		bi, bo = 3, 1
	}
	for _, rt := range m.Routes {
		dep := rt.Deployment
		if !dep.Supports(in.Protocol) {
			p.Dropped = append(p.Dropped, Dropped{Deployment: dep.Name, Model: rt.Model, Reason: ReasonProtocol})
			continue
		}
		if h != nil && h.Open(dep.Provider, dep.Name, rt.Model) {
			p.Dropped = append(p.Dropped, Dropped{Deployment: dep.Name, Model: rt.Model, Reason: ReasonCircuitOpen})
			continue
		}
		score := math.NaN()
		if rt.Price != nil {
			score = bi*rt.Price.InputPerMTokUSD + bo*rt.Price.OutputPerMTokUSD
		}
		p.Candidates = append(p.Candidates, Candidate{Route: rt, Score: score})
	}
	slices.SortStableFunc(p.Candidates, compareCandidates)
	for i := range p.Candidates {
		p.Candidates[i].Band = i
	}
}

func compareCandidates(a, b Candidate) int {
	an, bn := math.IsNaN(a.Score), math.IsNaN(b.Score)
	switch {
	case an != bn:
		if an {
			return 1
		}
		return -1
	case !an && a.Score != b.Score:
		if a.Score < b.Score {
			return -1
		}
		return 1
	}
	return a.Route.Deployment.Priority - b.Route.Deployment.Priority
}

// Refusal is the error for an empty pool (R-ADMIT): 503 gateway_error "all deployments cooling
// down" when only circuits emptied it, otherwise a 400 naming the constraint. Never a silent
// widening. It returns nil when the plan has candidates.
func (p *Plan) Refusal() error {
	if len(p.Candidates) > 0 {
		return nil
	}
	if len(p.Dropped) == 0 {
		return &failure.Error{Class: failure.InvalidRequest, Param: "model",
			Msg: fmt.Sprintf("no deployment serves model %q", p.Model)}
	}
	for _, d := range p.Dropped {
		if d.Reason == ReasonCircuitOpen {
			return CoolingDown() // some route will be back
		}
	}
	return &failure.Error{Class: failure.InvalidRequest, Param: "model",
		Msg: fmt.Sprintf("no deployment of model %q serves this endpoint", p.Model)}
}

// CoolingDown is the R-CIRCUIT-6 refusal: 503, retry-after 5 s, limit kind health.
func CoolingDown() error {
	return &failure.Error{Class: failure.GatewayError, Msg: MsgCoolingDown, RetryAfter: 5 * time.Second, LimitKind: "health"}
}

// MsgCoolingDown is the fixed message of R-CIRCUIT-6.
const MsgCoolingDown = "all deployments cooling down"
