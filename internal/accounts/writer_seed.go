package accounts

// PendingSettles starts a read of what the ledger will hold (a seed of the admission store,
// R-BILL-4): call it before reading the store, read the store, then call sum, then release.
// sum returns the amounts of the settle entries match selects that are still queued, or that
// were committed after PendingSettles was called (so possibly after the store's read began):
// every settle is then counted by the store's read, by sum, or, when its batch committed while
// the store was being read, by both (a seed high by those settles, never low). release is
// idempotent; until it is called the settles committed stay counted by Pending too
// (HoldPending).
func (w *Writer) PendingSettles() (sum func(match func(*LedgerEntry) bool) int64, release func()) {
	release = w.HoldPending()
	w.mu.Lock()
	mark := len(w.deferred) // deferred only grows while a hold is held: these were committed before
	w.mu.Unlock()
	sum = func(match func(*LedgerEntry) bool) int64 {
		w.mu.Lock()
		defer w.mu.Unlock()
		var s int64
		add := func(es []LedgerEntry) {
			for i := range es {
				if e := &es[i]; e.Kind == KindSettle && match(e) {
					s += e.AmountMicroUSD
				}
			}
		}
		add(w.queue)
		if mark < len(w.deferred) {
			add(w.deferred[mark:])
		}
		return s
	}
	return sum, release
}
