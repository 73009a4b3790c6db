package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// testSeedAcrossPeriodBoundary: issue 24's period-boundary repro on this store: a request
// reserves 900 of a key's daily budget of 1000 (its workspace's daily, its account's monthly
// budget too, and its prepaid balance) before midnight on a month's last day and settles 900
// after it, while the ledger writer has not flushed the settle yet. The admission store's seeds
// (accounts.Seeder over this store and the writer) count the queued settle, so 200 more is
// refused in the new period; once the writer has flushed, a reseed (a restart) counts it once.
func testSeedAcrossPeriodBoundary(t *testing.T, st accounts.Store) {
	if _, ok := st.(accounts.SpendReader); !ok {
		t.Skip("the store does not read spend back")
	}
	seed(t, st)
	_, err := st.Credit(bg, &accounts.LedgerEntry{At: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), AccountID: "a1",
		Kind: accounts.KindCredit, AmountMicroUSD: 5000})
	must(t, err)
	now := time.Date(2026, 11, 30, 23, 59, 30, 0, time.UTC)
	clock := func() time.Time { return now }
	w := accounts.NewWriter(st, accounts.WriterOptions{})
	seeder := accounts.Seeder{Store: st, Writer: w, Workspace: func(k string) string {
		if k == "k1" {
			return "w1"
		}
		return ""
	}}
	ly := []admission.Layer{
		{Scope: admission.ScopeKey, ID: "k1", Limits: admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodDay}},
		{Scope: admission.ScopeWorkspace, ID: "w1", Limits: admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodDay}},
		{Scope: admission.ScopeAccount, ID: "a1", Limits: admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodMonth}},
	}
	s := admission.NewMemory(clock, seeder)
	h, err := s.Acquire(bg, admission.Request{Layers: ly, CreditAccount: "a1", ReserveMicroUSD: 900})
	must(t, err)
	now = now.Add(time.Minute) // 00:00:30 on 1 December
	h.Settle(0, 900)           // the admission store first, then the ledger (billing.Reservation.Settle)
	w.Append(accounts.LedgerEntry{At: now, AccountID: "a1", KeyID: "k1", RequestID: "r-boundary", Kind: accounts.KindSettle, AmountMicroUSD: 900})
	check := func(when string) {
		t.Helper()
		for _, l := range ly {
			_, err := s.Acquire(bg, admission.Request{Layers: []admission.Layer{l}, CreditAccount: "a1", ReserveMicroUSD: 200})
			if fe := failure.From(err); fe == nil || fe.LimitKind != admission.KindBudget {
				t.Fatalf("%s: 200 more on the %s after 900 spent of 1000: err = %v, want the budget refusal", when, l.Scope, err)
			}
			if u, _ := s.Usage(bg, l); u.SpentMicroUSD != 900 {
				t.Errorf("%s: the %s's spend is %d, want 900", when, l.Scope, u.SpentMicroUSD)
			}
		}
		if bl, _ := s.Balance(bg, "a1"); bl.BalanceMicroUSD != 4100 {
			t.Errorf("%s: balance %+v, want 4100", when, bl)
		}
	}
	check("the settle still queued")
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	must(t, w.Flush(bg))
	cancel()
	must(t, <-done)
	s = admission.NewMemory(clock, seeder) // a restart: every counter reseeded from the ledger
	check("reseeded after the flush")
}

// testSeederExcludes: accounts.Seeder over this store leaves out the settles of the request ids
// an admission store's seed names (its float counts them: they found the counter without a
// seed), whether they are stored or still queued in the ledger writer; the others count once.
func testSeederExcludes(t *testing.T, st accounts.Store) {
	if _, ok := st.(accounts.SpendReader); !ok {
		t.Skip("the store does not read spend back")
	}
	seed(t, st)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	settle := func(rid string, micro int64) accounts.LedgerEntry {
		return accounts.LedgerEntry{At: at, AccountID: "a1", KeyID: "k1", RequestID: rid, Kind: accounts.KindSettle, AmountMicroUSD: micro}
	}
	must(t, st.AppendLedger(bg, []accounts.LedgerEntry{settle("stored-float", 1), settle("stored", 10)}))
	a, err := st.Account(bg, "a1")
	must(t, err)
	w := accounts.NewWriter(st, accounts.WriterOptions{}) // not running: what it is given stays queued
	w.Append(settle("queued-float", 100))
	w.Append(settle("queued", 1000))
	sd := accounts.Seeder{Store: st, Writer: w}
	exclude := []string{"stored-float", "queued-float", "elsewhere"}
	got, err := sd.SpentMicroUSD(bg, admission.ScopeKey, "k1", time.Time{}, exclude)
	must(t, err)
	if got != 1010 {
		t.Errorf("spend without the float's settles = %d, want 1010 (stored and queued, once each)", got)
	}
	if got, _ := sd.SpentMicroUSD(bg, admission.ScopeKey, "k1", time.Time{}, nil); got != 1111 {
		t.Errorf("spend = %d, want 1111", got)
	}
	bal, err := sd.BalanceMicroUSD(bg, "a1", exclude)
	must(t, err)
	if want := a.BalanceMicroUSD + 1 - 1000; bal != want {
		t.Errorf("balance without the float's settles = %d, want %d (stored %d, plus the stored one left out, less the queued one counted)",
			bal, want, a.BalanceMicroUSD)
	}
}
