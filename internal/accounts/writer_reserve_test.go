package accounts_test

import (
	"testing"

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
