package accounts_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// TestWriterShedsReservesFirst: while the queue is half full a reserve entry is refused (and
// counted in Dropped), but releases and settles are still queued up to the full size, so that
// the informational kinds never crowd out a settle; Pending counts settles only.
func TestWriterShedsReservesFirst(t *testing.T) {
	w := accounts.NewWriter(&fakeStore{}, accounts.WriterOptions{QueueSize: 4})
	for i, tc := range []struct {
		kind accounts.Kind
		want bool
	}{
		{accounts.KindReserve, true},  // 0 queued
		{accounts.KindReserve, true},  // 1 queued
		{accounts.KindReserve, false}, // 2 queued: half full
		{accounts.KindRelease, true},  // 2 queued
		{accounts.KindSettle, true},   // 3 queued
		{accounts.KindSettle, false},  // 4 queued: full
		{accounts.KindRelease, false}, // full
	} {
		if ok := w.Append(accounts.LedgerEntry{AccountID: "a1", Kind: tc.kind, AmountMicroUSD: 100}); ok != tc.want {
			t.Errorf("Append %d (%s) = %v, want %v", i, tc.kind, ok, tc.want)
		}
	}
	if w.Dropped() != 3 || w.Pending("a1") != 100 {
		t.Errorf("Dropped = %d, Pending = %d; want 3, 100 (reserves and releases are not pending settles)", w.Dropped(), w.Pending("a1"))
	}
}

// TestWriterAppendWait: AppendWait returns once its entry is in the store (a reserve carries the
// writer's replica id), without waiting for the flush interval; while the store fails it
// returns the context's error with the entry still queued (written once the store answers),
// and Lag reports the wait; a full queue refuses it with ErrLedgerDropped.
func TestWriterAppendWait(t *testing.T) {
	st := &fakeStore{}
	w := accounts.NewWriter(st, accounts.WriterOptions{FlushInterval: time.Hour, Replica: "rep_1"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	if err := w.AppendWait(context.Background(), accounts.LedgerEntry{AccountID: "a", RequestID: "r1", Kind: accounts.KindReserve}); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	got := append([]accounts.LedgerEntry(nil), st.written...)
	st.failN = 1 << 30
	st.mu.Unlock()
	if len(got) != 1 || got[0].RequestID != "r1" || got[0].Replica != "rep_1" {
		t.Fatalf("written %+v, want the reserve r1 of replica rep_1 (an hour-long flush interval not waited for)", got)
	}
	if w.Lag() != 0 {
		t.Errorf("Lag %v with nothing queued, want 0", w.Lag())
	}

	wctx, wcancel := context.WithCancel(context.Background())
	wcancel()
	if err := w.AppendWait(wctx, accounts.LedgerEntry{AccountID: "a", RequestID: "r2", Kind: accounts.KindReserve}); !errors.Is(err, context.Canceled) {
		t.Fatalf("AppendWait with the store down = %v, want context.Canceled", err)
	}
	for w.Lag() == 0 {
		time.Sleep(time.Millisecond) // the clock moves on: Lag grows from the entry's queueing
	}
	st.mu.Lock()
	st.failN = 0
	st.mu.Unlock()
	if err := w.Flush(context.Background()); err != nil { // Flush kicks the writer: no hour-long wait
		t.Fatal(err)
	}
	st.mu.Lock()
	n := len(st.written)
	st.mu.Unlock()
	if n != 2 {
		t.Errorf("%d entries written after the store answered, want 2", n)
	}

	full := accounts.NewWriter(&fakeStore{}, accounts.WriterOptions{QueueSize: 1}) // not running
	if err := full.AppendWait(wctx, accounts.LedgerEntry{Kind: accounts.KindReserve}); !errors.Is(err, context.Canceled) {
		t.Errorf("first AppendWait on a stopped writer = %v, want context.Canceled (queued)", err)
	}
	if err := full.AppendWait(wctx, accounts.LedgerEntry{Kind: accounts.KindReserve}); !errors.Is(err, accounts.ErrLedgerDropped) {
		t.Errorf("AppendWait on a full queue = %v, want ErrLedgerDropped", err)
	}
}

// TestWriterNextWindow: the ledger's commit window doubles after a timed write of at least
// WindowGrowBatch entries, up to MaxFlushInterval, and halves after one of fewer than half of
// it, down to FlushInterval (issue 27).
func TestWriterNextWindow(t *testing.T) {
	const lo, hi = accounts.DefaultLedgerFlushInterval, 4 * accounts.DefaultLedgerFlushInterval
	g := accounts.WindowGrowBatch
	steps := []struct {
		n    int
		want time.Duration
	}{{g, 2 * lo}, {5 * g, 4 * lo}, {g, hi}, {g, hi}, {g - 1, hi}, {0, hi / 2}, {g/2 - 1, lo}, {0, lo}}
	w := lo
	for i, s := range steps {
		if w = accounts.NextWindow(w, lo, hi, s.n, g); w != s.want {
			t.Fatalf("step %d (n=%d): window %v, want %v", i, s.n, w, s.want)
		}
	}
}
