// Package batch holds the commit-window rule shared by the two batching writers, the ledger's
// (internal/accounts) and the call log's (internal/audit): a window that grows with the load, so
// that a store's per-commit cost (each B-tree's last pages rewritten whole) is spread over more
// entries under load, and shrinks back when the load falls (issue 27; docs/architecture-notes.md
// says why the writers themselves stay apart).
package batch

import "time"

// NextWindow is the commit window after a timed write of n entries in window w: doubled (at
// most hi) when n >= grow, halved (at least lo) when n < grow/2, else w. Durations are the
// writer's waits between commits; n and grow are entries. No request waits for the window: the
// writers are queues.
func NextWindow(w, lo, hi time.Duration, n, grow int) time.Duration {
	switch {
	case n >= grow:
		return min(2*w, hi)
	case n < grow/2:
		return max(w/2, lo)
	}
	return w
}
