package accounts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of WriterOptions.
const (
	DefaultLedgerQueueSize     = 65536
	DefaultLedgerBatchSize     = 256
	DefaultLedgerFlushInterval = 100 * time.Millisecond
	DefaultLedgerDrainTimeout  = 10 * time.Second
)

// WriterOptions configure a Writer. The zero value gives the defaults.
type WriterOptions struct {
	// QueueSize is how many entries may wait to be written; zero or negative is
	// DefaultLedgerQueueSize (65536). An entry offered to a full queue is dropped and counted;
	// a reserve entry already when it is half full (Append).
	QueueSize int
	// BatchSize is the most entries written in one store transaction; zero or negative is
	// DefaultLedgerBatchSize (256).
	BatchSize int
	// FlushInterval is the longest an entry waits before it is written, and the pause after a
	// failed write before it is retried; zero or negative is DefaultLedgerFlushInterval (100 ms).
	FlushInterval time.Duration
	// DrainTimeout bounds the final writes when Run's context is done; zero or negative is
	// DefaultLedgerDrainTimeout (10 s).
	DrainTimeout time.Duration
	// Logf logs drops and store failures (counts and the store's error only), at most once per
	// FlushInterval; nil discards.
	Logf func(format string, args ...any)
}

// Writer queues ledger entries from the request path and writes them to the Store in batches
// (AppendLedger), off the request goroutine. Unlike the audit, a failed batch is not dropped:
// it stays at the head of the queue and is retried every FlushInterval until it is written
// (AppendLedger skips a settle already stored, so a retry after a lost commit bills nothing
// twice; its reserve and release entries may then be stored twice, changing no balance).
// Entries are written in the order they were appended.
//
// What is synchronous and what a crash can lose: a settle entry (and a reserve or release) is
// in memory from Append until its batch commits, at most FlushInterval later while the store
// answers. A process crash (or a drain that times out at shutdown) loses the entries queued
// then, and only those (a reserve already written then has no settle or release);
// every entry whose batch committed is in the store, with its balance change in the same
// transaction. Credits are not queued: the admin API writes them synchronously (Store.Credit)
// before it answers.
//
// Append, Pending, Flush and Dropped are safe for concurrent use; Run must be running for
// entries to be written.
type Writer struct {
	st           Store
	queueSize    int
	batchSize    int
	flushEvery   time.Duration
	drainTimeout time.Duration
	logf         func(string, ...any)

	kickc   chan struct{}
	running atomic.Bool
	dropped atomic.Uint64

	mu       sync.Mutex
	queue    []LedgerEntry    // oldest first
	pending  map[string]int64 // settle micro-USD queued, by account
	enqueued uint64           // sequence number of the last entry queued
	done     uint64           // every entry numbered <= done is written or lost
	progress chan struct{}    // closed and replaced when done advances

	batch   []LedgerEntry // owned by Run
	lastLog time.Time     // owned by Run
}

// NewWriter returns a Writer to st, which must not be nil. Call Run to start writing.
func NewWriter(st Store, o WriterOptions) *Writer {
	if st == nil {
		panic("accounts: NewWriter with a nil Store")
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultLedgerQueueSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultLedgerBatchSize
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultLedgerFlushInterval
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultLedgerDrainTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Writer{
		st: st, queueSize: o.QueueSize, batchSize: o.BatchSize, flushEvery: o.FlushInterval,
		drainTimeout: o.DrainTimeout, logf: o.Logf,
		kickc:    make(chan struct{}, 1),
		pending:  make(map[string]int64),
		progress: make(chan struct{}),
		batch:    make([]LedgerEntry, 0, o.BatchSize),
	}
}

// Append queues e and returns at once; it never waits for the store. It reports false, and
// counts e in Dropped, when the queue is full; a reserve entry is refused already when the
// queue is half full, so that while the store is slow or down the informational reserve and
// release entries (which change no balance) do not crowd out the settles. A caller whose
// reserve was refused should write no release for it.
func (w *Writer) Append(e LedgerEntry) bool {
	limit := w.queueSize
	if e.Kind == KindReserve {
		limit = (w.queueSize + 1) / 2
	}
	w.mu.Lock()
	if len(w.queue) >= limit {
		w.mu.Unlock()
		w.dropped.Add(1)
		return false
	}
	w.queue = append(w.queue, e)
	if e.Kind == KindSettle {
		w.pending[e.AccountID] += e.AmountMicroUSD
	}
	w.enqueued++
	full := len(w.queue) >= w.batchSize
	w.mu.Unlock()
	if full {
		w.kick()
	}
	return true
}

func (w *Writer) kick() {
	select {
	case w.kickc <- struct{}{}:
	default:
	}
}

// Pending returns the sum of the settle amounts queued for accountID and not yet written, in
// micro-USD.
func (w *Writer) Pending(accountID string) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending[accountID]
}

// Dropped returns how many entries will never be written: offered to a full queue (a reserve
// entry: to a half-full one), or still queued when a drain timed out.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Flush blocks until every entry queued before the call is written. It returns ctx.Err() if
// ctx is done first, which it will be when Run is not running or the store keeps failing.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	target := w.enqueued
	for w.done < target {
		ch := w.progress
		w.mu.Unlock()
		w.kick()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
	w.mu.Unlock()
	return nil
}

// Run writes queued entries until ctx is done, then writes what is still queued within
// DrainTimeout and returns: nil when everything was written, else an error counting the
// entries lost. It returns an error at once when Run is already running.
func (w *Writer) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("accounts: Writer.Run is already running")
	}
	defer w.running.Store(false)
	tick := time.NewTicker(w.flushEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return w.drain(ctx)
		case <-tick.C:
		case <-w.kickc:
		}
		for ctx.Err() == nil {
			ok, err := w.writeBatch(ctx)
			if err != nil {
				w.logErr(err)
				break // retried at the next tick
			}
			if !ok {
				break
			}
		}
	}
}

// drain writes until the queue is empty or the drain times out; what is left is dropped.
func (w *Writer) drain(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.drainTimeout)
	defer cancel()
	for dctx.Err() == nil {
		ok, err := w.writeBatch(dctx)
		if err != nil {
			w.logErr(err)
			t := time.NewTimer(w.flushEvery)
			select {
			case <-t.C:
			case <-dctx.Done():
			}
			t.Stop()
			continue
		}
		if !ok {
			return nil
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.queue)
	if n == 0 {
		return nil
	}
	w.queue = w.queue[:0]
	clear(w.pending)
	w.advance(w.enqueued)
	w.dropped.Add(uint64(n))
	return fmt.Errorf("accounts: %d ledger entries not written at shutdown: drain timed out after %v", n, w.drainTimeout)
}

// writeBatch writes the oldest entries, up to BatchSize, in one AppendLedger. It reports
// whether there was anything to write, and the store's error (the entries stay queued).
func (w *Writer) writeBatch(ctx context.Context) (bool, error) {
	w.mu.Lock()
	n := min(len(w.queue), w.batchSize)
	if n == 0 {
		w.mu.Unlock()
		return false, nil
	}
	w.batch = append(w.batch[:0], w.queue[:n]...)
	w.mu.Unlock()

	if err := w.st.AppendLedger(ctx, w.batch); err != nil {
		return true, err
	}

	w.mu.Lock()
	rest := copy(w.queue, w.queue[n:])
	clear(w.queue[rest:])
	w.queue = w.queue[:rest]
	for i := range w.batch {
		if e := &w.batch[i]; e.Kind == KindSettle {
			if w.pending[e.AccountID] -= e.AmountMicroUSD; w.pending[e.AccountID] == 0 {
				delete(w.pending, e.AccountID)
			}
		}
	}
	w.advance(w.enqueued - uint64(rest))
	w.mu.Unlock()
	return true, nil
}

// advance marks every entry numbered <= seq done and wakes Flush. w.mu must be held.
func (w *Writer) advance(seq uint64) {
	w.done = seq
	close(w.progress)
	w.progress = make(chan struct{})
}

func (w *Writer) logErr(err error) {
	if now := time.Now(); now.Sub(w.lastLog) >= time.Second {
		w.mu.Lock()
		n := len(w.queue)
		w.mu.Unlock()
		w.logf("accounts: writing the ledger failed, %d entries queued, retrying: %v", n, err)
		w.lastLog = now
	}
}
