package audit

import (
	"context"
	"time"
)

// Pruner is what [Prune] needs from a store: the SQLite and Postgres stores implement it.
type Pruner interface {
	// PruneRecords deletes at most limit records (with their attempts) created before
	// before, oldest first, in one short transaction, and returns how many it deleted. It
	// never touches the ledger. A record without a creation time is never deleted.
	PruneRecords(ctx context.Context, before time.Time, limit int) (int, error)
}

// Defaults of PruneOptions.
const (
	DefaultPruneInterval  = time.Minute
	DefaultPruneBatchSize = 500
)

// PruneOptions configure [Prune]. Retention is required; the zero value of the others gives
// the defaults.
type PruneOptions struct {
	// Retention is how long records are kept, counted from their created_at; records older
	// are deleted. Zero or negative keeps every record (Prune returns at once).
	Retention time.Duration
	// Interval is the pause between two rounds; a round deletes batches until none is left
	// older than the retention. Zero or negative means DefaultPruneInterval (1 min).
	Interval time.Duration
	// BatchSize is the most records deleted in one store transaction (a writer waits for at
	// most one batch). Zero or negative means DefaultPruneBatchSize (500).
	BatchSize int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Logf logs a store error, at most once per round, and a round that deleted records
	// (how many). Nil means no logging.
	Logf func(format string, args ...any)
	// AfterBatch, when set, is called after each batch with the number it deleted (for
	// metrics and tests); Prune waits for it.
	AfterBatch func(deleted int)
}

// Prune deletes the records of st older than o.Retention (issue 15 item 2,
// docs/configuration.md store.audit_retention) in the background: a round at once, then one
// every o.Interval, until ctx is done. A round deletes batches of at most o.BatchSize records,
// each its own short transaction, so writers of the store (the audit batches, the ledger)
// wait for one batch at most; between batches it yields. A store error ends the round, which
// the next one retries. The ledger is never pruned. It returns when ctx is done.
func Prune(ctx context.Context, st Pruner, o PruneOptions) {
	if o.Retention <= 0 {
		return
	}
	if o.Interval <= 0 {
		o.Interval = DefaultPruneInterval
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultPruneBatchSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		pruneRound(ctx, st, o)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pruneRound deletes batches until one deletes fewer than BatchSize records.
func pruneRound(ctx context.Context, st Pruner, o PruneOptions) {
	before := o.Now().Add(-o.Retention)
	total := 0
	for ctx.Err() == nil {
		n, err := st.PruneRecords(ctx, before, o.BatchSize)
		if err != nil {
			if ctx.Err() == nil {
				o.Logf("audit: pruning records older than %v: %v (retried in %v)", o.Retention, err, o.Interval)
			}
			break
		}
		total += n
		if o.AfterBatch != nil {
			o.AfterBatch(n)
		}
		if n < o.BatchSize {
			break
		}
		// Let the writers in before the next batch.
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
	}
	if total > 0 {
		o.Logf("audit: pruned %d records older than %v", total, o.Retention)
	}
}
