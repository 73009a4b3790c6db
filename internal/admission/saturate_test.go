package admission_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
)

func TestAddSubSat(t *testing.T) {
	for _, tc := range []struct{ a, b, add, sub int64 }{
		{1, 2, 3, -1},
		{math.MaxInt64, 1, math.MaxInt64, math.MaxInt64 - 1},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64, 0},
		{math.MinInt64, -1, math.MinInt64, math.MinInt64 + 1},
		{0, math.MinInt64, math.MinInt64, math.MaxInt64},
		{-5, math.MinInt64, math.MinInt64, math.MaxInt64 - 4},
		{5, math.MaxInt64, math.MaxInt64, 5 - math.MaxInt64},
	} {
		if got := admission.AddSat(tc.a, tc.b); got != tc.add {
			t.Errorf("AddSat(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.add)
		}
		if got := admission.SubSat(tc.a, tc.b); got != tc.sub {
			t.Errorf("SubSat(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.sub)
		}
	}
}

type zeroSeeder struct{}

func (zeroSeeder) SpentMicroUSD(context.Context, admission.Scope, string, time.Time, []string) (int64, error) {
	return 0, nil
}
func (zeroSeeder) BalanceMicroUSD(context.Context, string, []string) (int64, error) {
	return 1_000_000, nil
}

// Saturating money: settles of absurd costs (a provider reporting 2^62 tokens) pin a budget's
// spend at its maximum and a prepaid balance at its minimum; neither wraps around so that the
// budget or the balance admits again.
func TestMemorySettlesSaturate(t *testing.T) {
	layer := admission.Layer{Scope: admission.ScopeKey, ID: "k", Limits: admission.Limits{BudgetMicroUSD: 1_000_000}}
	for _, req := range []admission.Request{
		{Layers: []admission.Layer{layer}, ReserveMicroUSD: 100},
		{CreditAccount: "acct", ReserveMicroUSD: 100},
	} {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		m := admission.NewMemory(func() time.Time { return now }, zeroSeeder{})
		ctx := context.Background()
		h1, err := m.Acquire(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		h2, err := m.Acquire(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		h1.Settle(1<<62, math.MaxInt64)
		h2.Settle(1<<62, math.MaxInt64)
		if h, err := m.Acquire(ctx, req); err == nil {
			h.Release()
			t.Fatalf("%+v: admitted after two absurd settles (the spend or balance wrapped)", req)
		}
		if len(req.Layers) > 0 {
			if u, _ := m.Usage(ctx, layer); u.SpentMicroUSD != math.MaxInt64 {
				t.Fatalf("spend %d", u.SpentMicroUSD)
			}
		}
	}
}
