package accounts_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// TestWriterPendingSettles: a seed read counts each settle once at least and the store's read
// counts the rest: a settle still queued is in sum; one committed before the read began (even
// while another reader holds Pending, the balance reload) is not (the store has it); one
// committed after the read began is (the store's read may have missed it).
func TestWriterPendingSettles(t *testing.T) {
	st := &fakeStore{}
	w := accounts.NewWriter(st, accounts.WriterOptions{FlushInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	settle := func(rid string, micro int64) accounts.LedgerEntry {
		return accounts.LedgerEntry{At: time.Now(), AccountID: "a1", KeyID: "k1", RequestID: rid, Kind: accounts.KindSettle, AmountMicroUSD: micro}
	}
	all := func(*accounts.LedgerEntry) bool { return true }

	reload := w.HoldPending() // a balance reload in progress keeps committed settles deferred
	w.Append(settle("before", 1))
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sum, release := w.PendingSettles()
	w.Append(settle("after", 10))
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w.Append(accounts.LedgerEntry{At: time.Now(), AccountID: "a1", RequestID: "r", Kind: accounts.KindReserve, AmountMicroUSD: 1000})
	w.Append(accounts.LedgerEntry{At: time.Now(), AccountID: "a2", KeyID: "k2", RequestID: "queued", Kind: accounts.KindSettle, AmountMicroUSD: 100})
	if got := sum(all); got != 110 {
		t.Errorf("pending settles = %d, want 110 (committed after the read began, and queued)", got)
	}
	if got := sum(func(e *accounts.LedgerEntry) bool { return e.KeyID == "k2" }); got != 100 {
		t.Errorf("pending settles of k2 = %d, want 100", got)
	}
	release()
	release() // idempotent
	reload()
	if got := w.Pending("a1"); got != 0 {
		t.Errorf("Pending(a1) after the releases = %d, want 0", got)
	}
}

// TestCacheReloadMarksBeforeRead: a reload takes the balance marks (CacheOptions.BalanceMarks)
// under HoldPending and before it reads the stored balances, and hands each account's mark to
// Balances with the balance it read, so that a settle charged after the read is counted by the
// receiver (admission.Memory.SyncBalance).
func TestCacheReloadMarksBeforeRead(t *testing.T) {
	st := &fakeStore{accts: []accounts.Account{{ID: "a1", Billing: accounts.Prepaid, BalanceMicroUSD: 1000}}}
	var steps []string
	held := false
	type got struct{ balance, mark int64 }
	var synced []got
	c := accounts.NewCache(st, accounts.CacheOptions{
		Pending: func(string) int64 { return 100 },
		HoldPending: func() func() {
			held = true
			return func() { held = false }
		},
		BalanceMarks: func() func(string) int64 {
			steps = append(steps, "marks")
			if !held {
				t.Error("marks taken outside HoldPending")
			}
			if len(st.accts) > 0 && st.accts[0].BalanceMicroUSD != 1000 {
				t.Error("marks taken after the read")
			}
			return func(id string) int64 {
				if id != "a1" {
					t.Errorf("mark of %q", id)
				}
				return 42
			}
		},
		Balances: func(id string, balance, mark int64) { synced = append(synced, got{balance, mark}) },
	})
	if err := c.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || len(synced) != 1 || synced[0] != (got{900, 42}) {
		t.Fatalf("steps %v, synced %+v; want one marks call and a1 synced at 1000-100 with mark 42", steps, synced)
	}
}
