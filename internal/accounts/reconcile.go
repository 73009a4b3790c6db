package accounts

import (
	"context"
	"errors"
	"time"
)

// ReplicaStore is what the crash reconciliation needs of the store besides AppendLedger: the
// replicas' heartbeats and the reserves not yet ended (store migration 0007). The SQL stores
// implement it.
type ReplicaStore interface {
	// Heartbeat records that the replica id (started at started) is alive at now, creating its
	// row the first time.
	Heartbeat(ctx context.Context, id string, started, now time.Time) error
	// OpenReserves returns at most limit reserve entries, oldest first, that no settle or
	// release has ended, written before staleBefore by a replica whose last heartbeat is before
	// staleBefore (or that has none): the replica is gone, and will never end them. The
	// reserves of replica self (the caller's own id) are never returned: a replica is alive to
	// itself whatever its stored heartbeat says (a store that hung past the timeout leaves it
	// stale), and ends its own reserves.
	OpenReserves(ctx context.Context, staleBefore time.Time, self string, limit int) ([]LedgerEntry, error)
	// ForgetReplicas removes the heartbeat rows last seen before before that hold no open
	// reserve.
	ForgetReplicas(ctx context.Context, before time.Time) error
}

// AuditEnd is what the audit says of a request whose replica died before ending its reserve:
// found is false when the audit has no record of it; else committed says whether it committed,
// and for a committed request settle is its settle entry (the committed attempt's model,
// deployment, tokens, cost and usage provenance; the Reconciler fills in the rest).
type AuditEnd func(ctx context.Context, requestID string) (settle LedgerEntry, committed, found bool, err error)

// Defaults of ReconcilerOptions.
const (
	DefaultHeartbeatInterval = 2 * time.Second
	DefaultReplicaTimeout    = 10 * time.Second
)

// ReconcilerOptions configure a Reconciler. The zero value gives the defaults.
type ReconcilerOptions struct {
	// Heartbeat is how often the replica's heartbeat is written, and how often open reserves
	// are looked for; zero or negative is DefaultHeartbeatInterval (2 s).
	Heartbeat time.Duration
	// ReplicaTimeout is how long after its last heartbeat a replica counts as gone; zero or
	// negative is DefaultReplicaTimeout (10 s). Replicas' clocks must agree to well within it.
	ReplicaTimeout time.Duration
	// Audit looks a request up in the audit; nil treats every request as not found.
	Audit AuditEnd
	// Logf logs what was reconciled (counts and request ids) and store failures; nil discards.
	Logf func(format string, args ...any)
	// Count is called once per entry written, with its mark; nil counts nothing.
	Count func(mark string)
	// Replay, when set, writes the reserves of dead processes' crash journals to the ledger
	// (ReplayJournals over the journal directory this replica shares with others): Run calls it
	// every Heartbeat interval, before it reconciles, so that the reserves a replica killed
	// before its batch committed are in the ledger for the reconciliation to close, without
	// waiting for a process to start on that directory. It returns how many it wrote.
	Replay func(ctx context.Context) (int, error)
}

// Reconciler keeps one replica's heartbeat and closes the reserves of replicas that are gone
// (R-BILL-1, R-BILL-2; docs/deploy.md "A replica killed"): a reserve entry is made durable
// before its request's first byte reaches the caller (Writer.Secure), and its settle or release
// is queued after; a replica killed in between (kill -9, an OOM, a lost host) leaves the reserve open.
// Every Heartbeat interval, each replica looks for open reserves whose replica has sent no
// heartbeat for ReplicaTimeout and ends each one: a settle at the audited cost, marked
// MarkAuditSettled, when the audit has the request committed; a release marked
// MarkAuditReleased when the audit has it failed; else a release of the whole reserve marked
// MarkUnsettledCrash, logged and counted. It is safe with any number of replicas running: a
// live replica's reserves are never touched (its own, never: whatever its stored heartbeat
// says, a replica that reconciles is alive), and the ledger's unique indexes make two
// reconcilers (or a reconciler and a late settle) write each kind at most once per request.
type Reconciler struct {
	st      ReplicaStore
	ledger  Store
	id      string
	started time.Time
	o       ReconcilerOptions
}

// NewReconciler returns the reconciler of the replica id over st (both the ledger and the
// replica store; usually one SQL store).
func NewReconciler(st Store, rs ReplicaStore, id string, o ReconcilerOptions) *Reconciler {
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeatInterval
	}
	if o.ReplicaTimeout <= 0 {
		o.ReplicaTimeout = DefaultReplicaTimeout
	}
	if o.Audit == nil {
		o.Audit = func(context.Context, string) (LedgerEntry, bool, bool, error) {
			return LedgerEntry{}, false, false, nil
		}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Count == nil {
		o.Count = func(string) {}
	}
	return &Reconciler{st: rs, ledger: st, id: id, started: time.Now(), o: o}
}

// Beat writes the replica's heartbeat now. Call it once before the replica's first reserve.
func (r *Reconciler) Beat(ctx context.Context) error {
	return r.st.Heartbeat(ctx, r.id, r.started, time.Now())
}

// reconcileBatch is the most open reserves one pass closes in one ledger transaction.
const reconcileBatch = 256

// Reconcile closes the open reserves of the replicas gone at now, in batches, and returns how
// many entries it wrote (with a LedgerReporter store, those another replica's reconciliation
// wrote first are neither returned nor counted). The replica's own reserves are never among
// them, however stale its stored heartbeat (a store hang longer than ReplicaTimeout between
// the heartbeat's write and this read): its own requests are alive and end their reserves
// themselves.
func (r *Reconciler) Reconcile(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		open, err := r.st.OpenReserves(ctx, now.Add(-r.o.ReplicaTimeout), r.id, reconcileBatch)
		if err != nil || len(open) == 0 {
			return total, err
		}
		ends := make([]LedgerEntry, 0, len(open))
		marks := make([]string, 0, len(open))
		crashed := 0
		for i := range open {
			res := &open[i]
			settle, committed, found, err := r.o.Audit(ctx, res.RequestID)
			if err != nil {
				return total, err
			}
			end := LedgerEntry{At: now.UTC(), AccountID: res.AccountID, KeyID: res.KeyID, RequestID: res.RequestID,
				Model: res.Model, Kind: KindRelease, AmountMicroUSD: res.AmountMicroUSD}
			switch {
			case found && committed:
				settle.At, settle.AccountID, settle.KeyID, settle.RequestID = end.At, end.AccountID, end.KeyID, end.RequestID
				settle.Kind, settle.Mark = KindSettle, MarkAuditSettled
				if settle.Model == "" {
					settle.Model = res.Model
				}
				end = settle
			case found:
				end.Mark = MarkAuditReleased
			default:
				end.Mark = MarkUnsettledCrash
				crashed++
			}
			ends = append(ends, end)
			marks = append(marks, end.Mark)
		}
		written, err := appendReport(ctx, r.ledger, ends)
		if err != nil {
			return total, err
		}
		n := 0
		for i, m := range marks {
			if written[i] { // another replica's reconciliation may have closed it first
				r.o.Count(m)
				n++
			} else if m == MarkUnsettledCrash {
				crashed--
			}
		}
		total += n
		if n > 0 {
			r.o.Logf("accounts: reconciled %d reserves of replicas gone (%d %s: served or not, unknown; nothing billed); first request %s",
				n, crashed, MarkUnsettledCrash, open[0].RequestID)
		}
		if len(open) < reconcileBatch {
			return total, nil
		}
	}
}

// Run writes the heartbeat and reconciles every Heartbeat interval until ctx is done, then
// returns nil; it reconciles once at once (start-up). Store failures are logged (at most once a
// minute) and retried at the next interval.
func (r *Reconciler) Run(ctx context.Context) error {
	t := time.NewTicker(r.o.Heartbeat)
	defer t.Stop()
	var lastLog, lastReplayLog time.Time
	for {
		err := r.Beat(ctx)
		var replayErr error
		if err == nil && r.o.Replay != nil {
			// A journal that cannot be replayed now (the store refused a batch) is retried at
			// the next beat; the reconciliation of what is stored goes on meanwhile.
			var n int
			if n, replayErr = r.o.Replay(ctx); n > 0 {
				r.o.Logf("ledger: %d entries (reserves and settles) replayed from the journal of a process that died; the reconciliation closes the reserves left open", n)
			}
		}
		if replayErr != nil && ctx.Err() == nil {
			if now := time.Now(); now.Sub(lastReplayLog) >= time.Minute {
				r.o.Logf("accounts: replaying the ledger journals of dead processes failed, retrying every beat: %v", replayErr)
				lastReplayLog = now
			}
		}
		if err == nil {
			_, err = r.Reconcile(ctx, time.Now())
		}
		if err == nil {
			err = r.st.ForgetReplicas(ctx, time.Now().Add(-24*time.Hour))
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			if now := time.Now(); now.Sub(lastLog) >= time.Minute {
				r.o.Logf("accounts: ledger heartbeat or reconciliation failed, retrying: %v", err)
				lastLog = now
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// LedgerReporter is a store whose ledger append says which entries it wrote: an entry it
// already holds (its kind for its request is stored: another replica's reconciliation, a
// replayed journal) is skipped. The SQL stores implement it; the Reconciler counts only what
// it wrote (switchyard_ledger_reconciled_total), and ReplayJournals returns it.
type LedgerReporter interface {
	// AppendLedgerReport is AppendLedger, and reports for each entry of entries whether it
	// was written (false: skipped, or the append failed).
	AppendLedgerReport(ctx context.Context, entries []LedgerEntry) ([]bool, error)
}

// appendReport appends es to st and says which it wrote: every one when st is not a
// LedgerReporter.
func appendReport(ctx context.Context, st Store, es []LedgerEntry) ([]bool, error) {
	if lr, ok := st.(LedgerReporter); ok {
		return lr.AppendLedgerReport(ctx, es)
	}
	if err := st.AppendLedger(ctx, es); err != nil {
		return make([]bool, len(es)), err
	}
	written := make([]bool, len(es))
	for i := range written {
		written[i] = true
	}
	return written, nil
}
