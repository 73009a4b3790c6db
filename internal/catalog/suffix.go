package catalog

import (
	"fmt"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Suffix is what a trailing `:suffix` of the caller's model string asks for (R-SUFFIX).
// The zero value is no suffix.
type Suffix struct {
	// Pin is the provider of a `model:provider` suffix: a deployment's provider or name that
	// serves the model (R-SUFFIX-1). "" when absent.
	Pin string
	// Strategy is the ordering strategy of a `model:@strategy` suffix, one of Strategies
	// (R-SUFFIX-2). "" when absent. Whether the caller may override the strategy is the
	// server's decision (a key's allow_request_override).
	Strategy string
}

// Strategies are the ordering strategy names (R-ORDER-1), in contract order.
var Strategies = [...]string{"price", "latency", "throughput", "reliability", "balanced", "priority"}

// ValidStrategy reports whether s names an ordering strategy.
func ValidStrategy(s string) bool {
	for _, n := range Strategies {
		if s == n {
			return true
		}
	}
	return false
}

// ResolveSuffixed resolves the caller's model string like Resolve and, only when the whole
// string is neither a model id, an alias nor a dated snapshot of one (R-MODEL-5: ids such as
// `meta/llama3.1:70b` resolve whole first), splits a trailing `:suffix` (R-SUFFIX):
//
//   - `model:@strategy` sets the ordering strategy; an unknown strategy name is a 400
//     invalid_request;
//   - `model:provider` pins the provider; a provider (deployment provider or name) that serves
//     none of the model's routes that may serve the request (Resolution.Serves: reserved
//     deployments only through their endpoint) is a 400 invalid_request naming it;
//   - both suffixes (`model:provider:@strategy` or the reverse order), or the same suffix twice,
//     is a 400 invalid_request.
//
// The returned Resolution's Requested is the caller's whole string, suffix included: it is the
// model echoed in responses (contract.md). When nothing before a suffix resolves either, the
// error is Resolve's 404 model_unavailable for the whole string. Like Resolve it does not
// allocate when the whole string resolves.
func (c *Catalog) ResolveSuffixed(id string) (Resolution, Suffix, error) {
	res, err := c.Resolve(id)
	if err == nil {
		return res, Suffix{}, nil
	}
	head, tail, ok := cutLast(id)
	if !ok {
		return res, Suffix{}, err
	}
	var sx Suffix
	setSuffix(&sx, tail)
	base, berr := c.Resolve(head)
	if berr != nil {
		head2, _, ok2 := cutLast(head)
		if !ok2 {
			return res, Suffix{}, err
		}
		if _, berr2 := c.Resolve(head2); berr2 != nil {
			return res, Suffix{}, err // an unknown model, whatever the suffixes
		}
		return Resolution{}, Suffix{}, &failure.Error{Class: failure.InvalidRequest, Param: "model",
			Msg: fmt.Sprintf("model %q carries two suffixes; use either :provider or :@strategy", clip(id, maxQuotedID))}
	}
	base.Requested = id
	switch {
	case sx.Strategy != "" || strings.HasPrefix(tail, "@"):
		if !ValidStrategy(sx.Strategy) {
			return Resolution{}, Suffix{}, &failure.Error{Class: failure.InvalidRequest, Param: "model",
				Msg: fmt.Sprintf("unknown routing strategy %q in model %q: want one of price, latency, throughput, reliability, balanced, priority",
					clip(sx.Strategy, maxQuotedID), clip(id, maxQuotedID))}
		}
	default:
		if !servedBy(&base, sx.Pin) {
			return Resolution{}, Suffix{}, &failure.Error{Class: failure.InvalidRequest, Param: "model",
				Msg: fmt.Sprintf("provider %q pinned by model %q serves no route of model %q",
					clip(sx.Pin, maxQuotedID), clip(id, maxQuotedID), base.Model.ID)}
		}
	}
	return base, sx, nil
}

// cutLast splits id at its last ':' when both sides are non-empty.
func cutLast(id string) (head, tail string, ok bool) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 || i == len(id)-1 {
		return "", "", false
	}
	return id[:i], id[i+1:], true
}

func setSuffix(sx *Suffix, tail string) {
	if s, ok := strings.CutPrefix(tail, "@"); ok {
		sx.Strategy = s
		return
	}
	sx.Pin = tail
}

// servedBy reports whether a deployment whose provider or name is p has a route of the
// resolved model that may serve the request (Resolution.Serves: a public request never pins a
// reserved deployment).
func servedBy(res *Resolution, p string) bool {
	for _, rt := range res.Model.Routes {
		if (rt.Deployment.Provider == p || rt.Deployment.Name == p) && res.Serves(rt) {
			return true
		}
	}
	return false
}
