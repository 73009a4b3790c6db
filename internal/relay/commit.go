package relay

import (
	"context"
	"math"
	"net/http"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
)

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
