package relay

import (
	"math"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// BillingBYOK is the billing_source of an attempt on a caller's own connection (R-POLICY,
// R-AUDIT-2): no price snapshot, cost 0.
const BillingBYOK = "byok"

// priceOf is the billing price of a route (R-BILL-3): none for a caller's own connection
// (BillingBYOK), else the catalog model's price when set, otherwise the serving route's (its
// configured price or the price catalog's), otherwise none.
func priceOf(m *catalog.Model, rt *catalog.Route) (*catalog.Price, string) {
	switch {
	case rt.Deployment.BYOK: // the caller's own key: its provider bills the caller (R-POLICY)
		return nil, BillingBYOK
	case m != nil && m.Price != nil:
		return m.Price, "model_price"
	case rt.Price != nil:
		return rt.Price, "route_price"
	}
	return nil, "unpriced"
}

// snapshotOf is the audit's snapshot of price p at rates r; nil for a nil p.
func snapshotOf(p *catalog.Price, r catalog.Rates) *audit.PriceSnapshot {
	if p == nil {
		return nil
	}
	s := new(audit.PriceSnapshot)
	fillSnapshot(s, p, r)
	return s
}

func fillSnapshot(s *audit.PriceSnapshot, p *catalog.Price, r catalog.Rates) {
	src := p.Source
	if src == "" {
		src = catalog.PriceFromConfig
	}
	*s = audit.PriceSnapshot{InputPerMTokUSD: r.Input, OutputPerMTokUSD: r.Output, PerImageUSD: p.PerImageUSD,
		CacheReadPerMTokUSD: r.CacheRead, CacheWritePerMTokUSD: r.CacheWrite, CacheWrite1hPerMTokUSD: r.CacheWrite1h,
		TierAboveInputTokens: r.Tier, Source: src, WebSearchUSD: r.WebSearch}
}

// costUSD is the cost of usage u at price p (contract.md "Additions pinned in round 4"), in
// USD, rounded to the nearest micro-USD: the amount the ledger settles (integer micro-USD), so
// the audit's cost_usd and the ledger's agree. Each count is billed at its own price: uncached
// input at input, cache reads at cache_read, cache writes at cache_write (one-hour writes at
// cache_write_1h), output at output, all at the long-context tier the attempt's total input
// reaches (the rates returned), and web searches at web_search each. A nil p costs 0.
func costUSD(u dialect.Usage, p *catalog.Price) (float64, catalog.Rates) {
	if p == nil {
		return 0, catalog.Rates{}
	}
	// Each count converted on its own (saturateUsage bounds them): no sum can wrap.
	r := p.Rates(u.Input + u.Cached + u.CacheWrite)
	micro := r.MicroUSD(u.Input, u.Cached, u.CacheWrite, u.CacheWrite1h, u.Output) + r.WebSearchMicroUSD(u.WebSearchRequests)
	return math.Round(micro) / 1e6, r
}
