package relay

import (
	"math"
	"strconv"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// The audit's cost is the ledger's amount: rounded to the nearest micro-USD, so that
// cost_usd x 1e6 is the integer the ledger settles, with no float residue (0.0000025499999...).
func TestCostRoundedToMicroUSD(t *testing.T) {
	p := &audit.PriceSnapshot{InputPerMTokUSD: 0.15, OutputPerMTokUSD: 0.6}
	for _, tc := range []struct {
		u     dialect.Usage
		micro int64
	}{
		{dialect.Usage{Input: 17}, 3},                   // 2.55 micro-USD
		{dialect.Usage{Input: 10, Output: 5}, 5},        // 1.5 + 3 = 4.5
		{dialect.Usage{Input: 1000, Output: 1000}, 750}, // exact
		{dialect.Usage{Cached: 3, CacheWrite: 3}, 1},    // 0.9: prompt tokens all at the input price
		{dialect.Usage{}, 0},
	} {
		got := costUSD(tc.u, p)
		// As the audit's JSON shows it: at most 6 decimals.
		if s := strconv.FormatFloat(got, 'f', -1, 64); len(s) > len("0.")+6 {
			t.Errorf("%+v: cost %s is not a whole micro-USD", tc.u, s)
		}
		if m := int64(math.Round(got * 1e6)); m != tc.micro {
			t.Errorf("%+v: cost %v = %d micro-USD, want %d", tc.u, got, m, tc.micro)
		}
	}
	if costUSD(dialect.Usage{Input: 5}, nil) != 0 {
		t.Error("unpriced usage must cost 0")
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
