package relay

import (
	"math"
	"strconv"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// The audit's cost is the ledger's amount: rounded to the nearest micro-USD, so that
// cost_usd x 1e6 is the integer the ledger settles, with no float residue (0.0000025499999...).
// A price without cache prices bills cache reads and writes at its input price (contract.md).
func TestCostRoundedToMicroUSD(t *testing.T) {
	p := &catalog.Price{InputPerMTokUSD: 0.15, OutputPerMTokUSD: 0.6}
	for _, tc := range []struct {
		u     dialect.Usage
		micro int64
	}{
		{dialect.Usage{Input: 17}, 3},                   // 2.55 micro-USD
		{dialect.Usage{Input: 10, Output: 5}, 5},        // 1.5 + 3 = 4.5
		{dialect.Usage{Input: 1000, Output: 1000}, 750}, // exact
		{dialect.Usage{Cached: 3, CacheWrite: 3}, 1},    // 0.9: no cache prices, all at the input price
		{dialect.Usage{}, 0},
	} {
		got, _ := costUSD(tc.u, p)
		// As the audit's JSON shows it: at most 6 decimals.
		if s := strconv.FormatFloat(got, 'f', -1, 64); len(s) > len("0.")+6 {
			t.Errorf("%+v: cost %s is not a whole micro-USD", tc.u, s)
		}
		if m := int64(math.Round(got * 1e6)); m != tc.micro {
			t.Errorf("%+v: cost %v = %d micro-USD, want %d", tc.u, got, m, tc.micro)
		}
	}
	if c, _ := costUSD(dialect.Usage{Input: 5}, nil); c != 0 {
		t.Error("unpriced usage must cost 0")
	}
}

func f64(v float64) *float64 { return &v }

// Each count at its own price (issue 28, "Done when"): 1,000 uncached, 9,000 cache-read, 2,000
// cache-write and 100 output tokens at {input 3, output 15, cache_read 0.3, cache_write 3.75}
// cost exactly 0.0147 USD; one-hour writes at cache_write_1h (default: cache_write); a tier
// prices every token above its threshold, and the base prices apply at or below it.
func TestCostSplitAndTiers(t *testing.T) {
	sonnet := &catalog.Price{InputPerMTokUSD: 3, OutputPerMTokUSD: 15, CacheReadPerMTokUSD: f64(0.3), CacheWritePerMTokUSD: f64(3.75),
		Tiers: []catalog.PriceTier{{AboveInputTokens: 200_000, Input: f64(6), Output: f64(22.5), CacheRead: f64(0.6)}}}
	with1h := *sonnet
	with1h.CacheWrite1hPerMTokUSD = f64(6)
	for _, tc := range []struct {
		name  string
		p     *catalog.Price
		u     dialect.Usage
		micro int64
		tier  int64
	}{
		{"issue example", sonnet, dialect.Usage{Input: 1000, Cached: 9000, CacheWrite: 2000, Output: 100}, 14_700, 0},
		{"one-hour writes default to cache_write", sonnet, dialect.Usage{CacheWrite: 2000, CacheWrite1h: 1000}, 7_500, 0},
		{"one-hour writes at cache_write_1h", &with1h, dialect.Usage{CacheWrite: 2000, CacheWrite1h: 1000}, 3_750 + 6_000, 0},
		// 200,000 input tokens: not above the threshold, base prices.
		{"at the threshold", sonnet, dialect.Usage{Input: 100_000, Cached: 100_000, Output: 1000}, 300_000 + 30_000 + 15_000, 0},
		// 200,001: every token at the tier; cache_write is left out of the tier and keeps 3.75.
		{"above the threshold", sonnet, dialect.Usage{Input: 100_000, Cached: 100_000, CacheWrite: 1, Output: 1000}, 600_000 + 60_000 + 4 + 22_500, 200_000},
	} {
		got, r := costUSD(tc.u, tc.p)
		if m := int64(math.Round(got * 1e6)); m != tc.micro || r.Tier != tc.tier {
			t.Errorf("%s: %v USD (%d micro-USD) at tier %d, want %d micro-USD at tier %d", tc.name, got, m, r.Tier, tc.micro, tc.tier)
		}
	}
	if got, _ := costUSD(dialect.Usage{Input: 1000, Cached: 9000, CacheWrite: 2000, Output: 100}, sonnet); got != 0.0147 {
		t.Errorf("issue example = %v, want exactly 0.0147", got)
	}
}

// Web searches are billed per call at the price's web_search (docs/pricing.md "Server-tool
// calls"), at every tier, in the one rounding of the attempt's cost; a price without it bills
// none; a saturated count cannot overflow.
func TestCostWebSearches(t *testing.T) {
	p := &catalog.Price{InputPerMTokUSD: 3, OutputPerMTokUSD: 15, PerWebSearchUSD: 0.01,
		Tiers: []catalog.PriceTier{{AboveInputTokens: 1000, Input: f64(6)}}}
	for _, tc := range []struct {
		name  string
		p     *catalog.Price
		u     dialect.Usage
		micro int64
	}{
		{"three searches", p, dialect.Usage{Input: 1000, Output: 100, WebSearchRequests: 3}, 3_000 + 1_500 + 30_000},
		{"at a tier", p, dialect.Usage{Input: 1001, WebSearchRequests: 1}, 6_006 + 10_000},
		{"a fraction of a micro-USD per search", &catalog.Price{PerWebSearchUSD: 0.0000014}, dialect.Usage{WebSearchRequests: 3}, 4}, // 4.2
		{"no web_search price", &catalog.Price{InputPerMTokUSD: 3}, dialect.Usage{Input: 1, WebSearchRequests: 5}, 3},
	} {
		got, r := costUSD(tc.u, tc.p)
		if m := int64(math.Round(got * 1e6)); m != tc.micro || r.WebSearch != tc.p.PerWebSearchUSD {
			t.Errorf("%s: %v USD (%d micro-USD) at %v per search, want %d micro-USD", tc.name, got, m, r.WebSearch, tc.micro)
		}
	}
	u := saturateUsage(dialect.Usage{WebSearchRequests: math.MaxInt64})
	if got, _ := costUSD(u, p); u.WebSearchRequests != MaxUsageTokens || math.IsInf(got, 0) || got <= 0 {
		t.Errorf("saturated searches %d cost %v", u.WebSearchRequests, got)
	}
	if u := saturateUsage(dialect.Usage{WebSearchRequests: -4}); u.WebSearchRequests != 0 {
		t.Errorf("negative searches saturate to %d, want 0", u.WebSearchRequests)
	}
}

// Pools keep small buffers only: a scratch that grew past maxPooledBuffer on one request goes
// back to the pool without that buffer.
func TestScratchPoolDropsLargeBuffers(t *testing.T) {
	rl := New(nil, nil)
	sc := rl.pool.Get().(*scratch)
	sc.body = make([]byte, 0, 2*maxPooledBuffer)
	sc.resp = make([]byte, 10, maxPooledBuffer)
	sc.hold = make([]byte, 0, maxPooledBuffer+1)
	rl.putScratch(sc)
	if sc.body != nil || sc.hold != nil || cap(sc.resp) != maxPooledBuffer {
		t.Fatalf("kept: body %d hold %d resp %d", cap(sc.body), cap(sc.hold), cap(sc.resp))
	}
}
