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
