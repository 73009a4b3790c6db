package catalog

import (
	"path/filepath"
	"time"

	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/pricedata"
)

// Price is a listed price in USD per million tokens, in USD per image returned by the images
// endpoints (0: images are billed by their tokens only), and in USD per server-side web search
// (0: not billed per call), as contract.md "Additions pinned in round 4" and docs/pricing.md
// define it: a nil CacheRead or CacheWrite bills those tokens at the
// input price, a nil CacheWrite1h at the cache-write price, and Tiers price every token of an
// attempt whose total input is above a threshold. Use Rates for the prices in force.
type Price struct {
	InputPerMTokUSD  float64
	OutputPerMTokUSD float64
	PerImageUSD      float64
	// PerWebSearchUSD is USD per web search the provider ran and reported
	// (dialect.Usage.WebSearchRequests; docs/pricing.md "Server-tool calls"); tiers leave it.
	PerWebSearchUSD float64
	// CacheReadPerMTokUSD, CacheWritePerMTokUSD and CacheWrite1hPerMTokUSD are the cache
	// prices; nil means not listed (the defaults above).
	CacheReadPerMTokUSD    *float64
	CacheWritePerMTokUSD   *float64
	CacheWrite1hPerMTokUSD *float64
	// Tiers are the long-context tiers by ascending AboveInputTokens.
	Tiers []PriceTier
	// Source is where the price comes from: PriceFromConfig or PriceFromCatalog.
	Source string
	// CatalogModel is the built-in catalog's model id the price was found under ("" for a
	// configured price).
	CatalogModel string
}

// PriceTier is one long-context tier: nil fields keep the base price's value.
type PriceTier struct {
	AboveInputTokens                                   int64
	Input, Output, CacheRead, CacheWrite, CacheWrite1h *float64
}

// Where a price or a context window comes from (plan and route output, the audit's price
// snapshot).
const (
	PriceFromConfig  = "config"
	PriceFromCatalog = "catalog"
	PriceFromNone    = "none"
)

// Rates are the per-token prices in force for one attempt, in USD per million tokens, every
// default resolved, and WebSearch in USD per web search. Tier is the AboveInputTokens of the
// tier applied, 0 for the base price.
type Rates struct {
	Input, Output, CacheRead, CacheWrite, CacheWrite1h float64
	WebSearch                                          float64
	Tier                                               int64
}

// Rates returns the prices in force for an attempt whose total input (uncached + cache reads
// + cache writes) is inputTokens: the tier with the highest threshold below inputTokens, or the
// base price; a nil p gives zero rates.
func (p *Price) Rates(inputTokens int64) Rates {
	if p == nil {
		return Rates{}
	}
	r := Rates{Input: p.InputPerMTokUSD, Output: p.OutputPerMTokUSD, WebSearch: p.PerWebSearchUSD}
	read, write, write1h := p.CacheReadPerMTokUSD, p.CacheWritePerMTokUSD, p.CacheWrite1hPerMTokUSD
	for i := len(p.Tiers) - 1; i >= 0; i-- {
		t := &p.Tiers[i]
		if inputTokens <= t.AboveInputTokens {
			continue
		}
		r.Tier = t.AboveInputTokens
		pick(&r.Input, t.Input)
		pick(&r.Output, t.Output)
		read, write, write1h = or(t.CacheRead, read), or(t.CacheWrite, write), or(t.CacheWrite1h, write1h)
		break
	}
	r.CacheRead, r.CacheWrite = r.Input, r.Input
	pick(&r.CacheRead, read)
	pick(&r.CacheWrite, write)
	r.CacheWrite1h = r.CacheWrite
	pick(&r.CacheWrite1h, write1h)
	return r
}

func pick(dst *float64, v *float64) {
	if v != nil {
		*dst = *v
	}
}

func or(a, b *float64) *float64 {
	if a != nil {
		return a
	}
	return b
}

// MaxInput is the highest input-side price of the rates (input, cache read, cache write,
// one-hour cache write): what the reserve charges each estimated input token, so that no mix
// of cached and uncached input the provider reports can cost more than was reserved
// (docs/limits.md).
func (r Rates) MaxInput() float64 {
	return max(r.Input, r.CacheRead, r.CacheWrite, r.CacheWrite1h)
}

// MicroUSD is the cost of the counts at r, in micro-USD, not rounded: each count (tokens) times
// its price (USD per million tokens) is micro-USD. write1h is the part of write that is
// one-hour cache writes. Each count is converted on its own, so that a sum of huge counts
// cannot wrap before the conversion.
func (r Rates) MicroUSD(input, read, write, write1h, output int64) float64 {
	write1h = min(max(write1h, 0), max(write, 0))
	return float64(input)*r.Input + float64(read)*r.CacheRead + float64(write-write1h)*r.CacheWrite +
		float64(write1h)*r.CacheWrite1h + float64(output)*r.Output
}

// WebSearchMicroUSD is the cost of calls web searches at r, in micro-USD, not rounded.
func (r Rates) WebSearchMicroUSD(calls int64) float64 {
	return float64(calls) * r.WebSearch * 1e6
}

// configPrice converts a configured price (source config); nil stays nil.
func configPrice(p *config.Price) *Price {
	if p == nil {
		return nil
	}
	out := &Price{InputPerMTokUSD: p.Input, OutputPerMTokUSD: p.Output, PerImageUSD: p.Image, PerWebSearchUSD: p.WebSearch,
		CacheReadPerMTokUSD: p.CacheRead, CacheWritePerMTokUSD: p.CacheWrite, CacheWrite1hPerMTokUSD: p.CacheWrite1h,
		Source: PriceFromConfig}
	for _, t := range p.Tiers {
		out.Tiers = append(out.Tiers, PriceTier{AboveInputTokens: t.AboveInputTokens, Input: t.Input, Output: t.Output,
			CacheRead: t.CacheRead, CacheWrite: t.CacheWrite, CacheWrite1h: t.CacheWrite1h})
	}
	sortTiers(out.Tiers)
	return out
}

// catalogPrice converts a price catalog entry (source catalog); nil when it lists neither an
// input nor an output price.
func catalogPrice(e pricedata.Entry) *Price {
	p := e.Price
	if p.Input == nil && p.Output == nil {
		return nil
	}
	out := &Price{CacheReadPerMTokUSD: p.CacheRead, CacheWritePerMTokUSD: p.CacheWrite, CacheWrite1hPerMTokUSD: p.CacheWrite1h,
		Source: PriceFromCatalog, CatalogModel: e.ModelID}
	pick(&out.InputPerMTokUSD, p.Input)
	pick(&out.OutputPerMTokUSD, p.Output)
	pick(&out.PerWebSearchUSD, p.WebSearch)
	for _, t := range p.Tiers {
		out.Tiers = append(out.Tiers, PriceTier{AboveInputTokens: t.AboveInputTokens, Input: t.Input, Output: t.Output,
			CacheRead: t.CacheRead, CacheWrite: t.CacheWrite, CacheWrite1h: t.CacheWrite1h})
	}
	sortTiers(out.Tiers)
	return out
}

func sortTiers(ts []PriceTier) {
	for i := 1; i < len(ts); i++ { // insertion sort: a handful of tiers
		for j := i; j > 0 && ts[j].AboveInputTokens < ts[j-1].AboveInputTokens; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// CatalogProvider is the price catalog's provider id of a deployment (contract.md "Additions
// pinned in round 4"): its provider when that is one of the catalog's ids (openai, anthropic,
// google, bedrock, vertex, azure), otherwise its platform when that is a cloud that hosts the
// model (bedrock, vertex, azure), otherwise "" (not in the catalog). An OpenAI- or
// Anthropic-compatible service under its own provider id (a reseller, a self-hosted server) is
// never priced at the model maker's list price: its platform is the dialect's own API, which
// says nothing about who bills it.
func CatalogProvider(provider, platform string, known func(string) bool) string {
	if known(provider) {
		return provider
	}
	switch Platform(platform) {
	case PlatformBedrock, PlatformVertex, PlatformAzure:
		if known(platform) {
			return platform
		}
	}
	return ""
}

// priceCatalog is what New needs of the price catalog.
type priceCatalog interface {
	HasProvider(id string) bool
	Lookup(provider, model string, at time.Time) (pricedata.Entry, bool)
}

// loadPriceCatalog returns the price catalog cfg.Pricing selects: nil when pricing.catalog is
// false, the catalog_file (a relative path is taken from the configuration file's directory)
// when set, else the built-in one.
func loadPriceCatalog(cfg *config.Config) (priceCatalog, error) {
	if !cfg.Pricing.CatalogOn() {
		return nil, nil
	}
	if f := cfg.Pricing.CatalogFile; f != "" {
		if !filepath.IsAbs(f) && cfg.File != "" {
			f = filepath.Join(filepath.Dir(cfg.File), f)
		}
		return pricedata.Load(f)
	}
	return pricedata.Builtin()
}

// applyPriceCatalog gives each route without a price the catalog's price for its deployment's
// catalog provider and upstream model, and a route whose own and whose model's context window
// are both unset the catalog's window (contract.md "Additions pinned in round 4"). It runs once
// per configuration load (New), never per request.
func applyPriceCatalog(pc priceCatalog, m *Model, r *Route, at time.Time) {
	r.ContextWindowSource = PriceFromNone
	if r.ContextWindowTokens > 0 || m.ContextWindowTokens > 0 {
		r.ContextWindowSource = PriceFromConfig
	}
	if pc == nil || (r.Price != nil && r.ContextWindowSource == PriceFromConfig) {
		return
	}
	prov := CatalogProvider(r.Deployment.Provider, string(r.Deployment.Platform), pc.HasProvider)
	if prov == "" {
		return
	}
	e, ok := pc.Lookup(prov, r.UpstreamModel, at)
	if !ok {
		return
	}
	if r.Price == nil {
		r.Price = catalogPrice(e)
	}
	if r.ContextWindowSource == PriceFromNone && e.ContextWindow > 0 {
		r.ContextWindowTokens, r.ContextWindowSource = e.ContextWindow, PriceFromCatalog
	}
}

// PriceSource says where the route's price comes from: PriceFromConfig, PriceFromCatalog or
// PriceFromNone (unpriced; billing may still use the model's price, R-BILL-3).
func (r *Route) PriceSource() string {
	if r.Price == nil {
		return PriceFromNone
	}
	if r.Price.Source == "" {
		return PriceFromConfig
	}
	return r.Price.Source
}
