package relay

import (
	"math"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// singleRateCostUSD is the cost as it was computed before cache prices (issue 28): every prompt
// token at the input price, output at the output price, rounded to the micro-USD. The reference
// of BenchmarkCostUSD.
func singleRateCostUSD(u dialect.Usage, in, out float64) float64 {
	micro := float64(u.Input)*in + float64(u.Cached)*in + float64(u.CacheWrite)*in + float64(u.Output)*out
	return math.Round(micro) / 1e6
}

var costSink float64

// BenchmarkCostUSD is the settle's cost computation of one attempt (finishUsage): the
// single-rate computation it replaced, then costUSD at a plain price, at cache prices, above a
// long-context tier, and with web searches. docs/performance.md "Prices on the hot path".
func BenchmarkCostUSD(b *testing.B) {
	u := dialect.Usage{Input: 1000, Cached: 9000, CacheWrite: 2000, CacheWrite1h: 500, Output: 100, Reasoning: 20}
	plain := &catalog.Price{InputPerMTokUSD: 3, OutputPerMTokUSD: 15}
	cached := &catalog.Price{InputPerMTokUSD: 3, OutputPerMTokUSD: 15, CacheReadPerMTokUSD: f64(0.3), CacheWritePerMTokUSD: f64(3.75),
		CacheWrite1hPerMTokUSD: f64(6)}
	tiered := *cached
	tiered.Tiers = []catalog.PriceTier{{AboveInputTokens: 10_000, Input: f64(6), Output: f64(22.5), CacheRead: f64(0.6)}}
	searched := *cached
	searched.PerWebSearchUSD = 0.01
	withSearches := u
	withSearches.WebSearchRequests = 3
	b.Run("single-rate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			costSink += singleRateCostUSD(u, 3, 15)
		}
	})
	for _, tc := range []struct {
		name string
		p    *catalog.Price
		u    dialect.Usage
	}{
		{"plain", plain, u}, {"cache", cached, u}, {"cache+tier", &tiered, u}, {"cache+web_search", &searched, withSearches},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, _ := costUSD(tc.u, tc.p)
				costSink += c
			}
		})
	}
}
