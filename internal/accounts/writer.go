package accounts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-gw/switchyard/internal/batch"
)

// Defaults of WriterOptions.
const (
	DefaultLedgerQueueSize     = 65536
	DefaultLedgerBatchSize     = 4096
	DefaultLedgerFlushInterval = 100 * time.Millisecond
	// DefaultLedgerMaxFlushInterval is the longest the commit window grows to under load by
	// default: DefaultLedgerFlushInterval, a window that does not grow (see
	// WriterOptions.MaxFlushInterval).
	DefaultLedgerMaxFlushInterval = DefaultLedgerFlushInterval
	DefaultLedgerDrainTimeout     = 10 * time.Second
)

// WriterOptions configure a Writer. The zero value gives the defaults.
type WriterOptions struct {
	// QueueSize is how many entries may wait to be written; zero or negative is
	// DefaultLedgerQueueSize (65536). An entry offered to a full queue is dropped and counted;
	// a reserve entry already when it is half full (Append).
	QueueSize int
	// BatchSize is the most entries written in one store transaction; zero or negative is
	// DefaultLedgerBatchSize (4096): one commit carries every entry ready, a batch that grows
	// with the load (issue 27 item 2; the store writes it in chunks of statements).
	BatchSize int
	// FlushInterval is the commit window at low load: the longest an entry waits before it is
	// written, and the pause after a failed write before it is retried; zero or negative is
	// DefaultLedgerFlushInterval (100 ms).
	FlushInterval time.Duration
	// MaxFlushInterval is the longest the commit window grows to under load: after a timed
	// write of at least 64 entries the window doubles, up to it, and after one of fewer than 32
	// it halves, down to FlushInterval (issue 27: each commit rewrites the last pages of the
	// ledger's B-trees whole, so fewer, larger commits write fewer bytes per entry). No request
	// waits for it: Secure appends to the journal, or wakes the writer at once (no Journal), as
	// Flush and a full batch do. It also bounds the settles a crash leaves to the reconciliation.
	// Zero or negative is FlushInterval: the window does not grow. Not the default yet: with a
	// 400 ms window TestBillingBurst/sqlite saw a prepaid account overspend by more than one
	// reserve in 2 runs of 6 (never with 100 ms), a race between the balance's reseed and the
	// settles queued that a longer window exposes, not yet found. Below FlushInterval it is
	// FlushInterval.
	MaxFlushInterval time.Duration
	// DrainTimeout bounds the final writes when Run's context is done; zero or negative is
	// DefaultLedgerDrainTimeout (10 s).
	DrainTimeout time.Duration
	// Logf logs drops and store failures (counts and the store's error only), at most once per
	// FlushInterval, and a warning when the oldest entry queued waits longer than LagWarning;
	// nil discards.
	Logf func(format string, args ...any)
	// Replica is this process's replica id, written on every reserve entry (LedgerEntry.Replica)
	// for the crash reconciliation; "" writes none.
	Replica string
	// Journal, when set, makes a reserve durable against a crash of this process at Secure
	// with one append to a local file instead of a wait for the store's commit (the embedded
	// store: the file is next to the database, read back at the next start; ReplayJournals),
	// and each settle as it is queued, so that a crash loses no queued settle either.
	// nil: Secure waits for the group commit (a shared store, whose other replicas reconcile).
	Journal Journal
}

// Journal is the crash journal of one process's reserves and settles (FileJournal): what
// Secure writes instead of waiting for a commit, and each settle as it is queued.
type Journal interface {
	// Log appends the reserve or settle entry e (queued as number seq; by value, so that the
	// caller's entry stays on its stack) and returns once its bytes are
	// handed to the operating system (they survive the process, not the machine); done is the
	// number of the last entry the store holds (the journal may forget every entry <= done).
	Log(e LedgerEntry, seq, done uint64) error
	// Close closes the journal; clean says every entry it holds is in the store (a drained
	// shutdown), so its files may go.
	Close(clean bool) error
}

// Ticket names a queued reserve entry (Reserve): Secure makes it durable, End ends it.
type Ticket struct{ seq uint64 }

// LagWarning is how long the oldest queued entry may wait before the Writer logs a warning (at
// most once per 10 s): past it, a crash loses more than a second of settles from the queue.
const LagWarning = time.Second

// Writer queues ledger entries from the request path and writes them to the Store in batches
// (AppendLedger), off the request goroutine. Unlike the audit, a failed batch is not dropped:
// it stays at the head of the queue and is retried every FlushInterval until it is written
// (AppendLedger skips an entry already stored, so a retry after a lost commit writes nothing
// twice). Entries are written in the order they were appended.
//
// What is synchronous and what a crash can lose: a settle entry (and a reserve or release) is
// in memory from Append until its batch commits, at most MaxFlushInterval later
// (FlushInterval at low load) while the store answers. A process crash (or a drain that times
// out at shutdown) loses the entries queued then, and only those, except what the Journal
// holds: every reserve secured and every settle queued, which ReplayJournals writes to the
// store. Every entry whose batch committed is in the store, with its balance change in the
// same transaction. A request's reserve entry is queued at admission (Reserve) and made
// durable at its commit, before the first byte to the caller (Secure: a Journal line, or the
// group commit), so a settle lost (no Journal, or a Journal write that failed) leaves an open
// reserve, which the Reconciler of another (or the restarted) replica closes: no served
// request ends without a ledger trace. An end whose reserve is still queued takes its place
// (End): entries are written in the order their request's first entry was queued. Lag reports
// how far the writer is behind (logged past LagWarning). Credits are not queued: the admin
// API writes them synchronously (Store.Credit) before it answers.
//
// Append, Pending, Flush and Dropped are safe for concurrent use; Run must be running for
// entries to be written.
type Writer struct {
	st           Store
	queueSize    int
	batchSize    int
	flushEvery   time.Duration
	maxFlush     time.Duration
	drainTimeout time.Duration
	logf         func(string, ...any)

	kickc   chan struct{}
	running atomic.Bool
	dropped atomic.Uint64

	replica string
	journal Journal
	// journalLogged is when a journal write failure was last logged (Unix ns).
	journalLogged atomic.Int64

	mu       sync.Mutex
	queue    []LedgerEntry    // oldest first
	queuedAt []time.Time      // when each entry of queue was queued
	pending  map[string]int64 // settle micro-USD queued, by account
	enqueued uint64           // sequence number of the last entry queued
	done     uint64           // every entry numbered <= done is written or lost
	progress chan struct{}    // closed and replaced when done advances
	// inflight is how many entries at the head of queue the running batch holds (writeBatch):
	// End replaces no reserve among them.
	inflight int
	// holds counts HoldPending calls not yet released; while it is above 0 the settles of the
	// batches committed stay in pending (deferred lists them) until the last release.
	holds    int
	deferred []LedgerEntry

	batch   []LedgerEntry // owned by Run
	lastLog time.Time     // owned by Run
	lastLag time.Time     // owned by Run: the last lag warning
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
	if o.MaxFlushInterval <= 0 {
		o.MaxFlushInterval = o.FlushInterval
	}
	o.MaxFlushInterval = max(o.MaxFlushInterval, o.FlushInterval)
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultLedgerDrainTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Writer{
		st: st, queueSize: o.QueueSize, batchSize: o.BatchSize, flushEvery: o.FlushInterval,
		maxFlush:     o.MaxFlushInterval,
		drainTimeout: o.DrainTimeout, logf: o.Logf, replica: o.Replica, journal: o.Journal,
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
	_, ok := w.append(e)
	return ok
}

// append queues e and returns its sequence number, or false when it was dropped.
func (w *Writer) append(e LedgerEntry) (uint64, bool) {
	limit := w.queueSize
	if e.Kind == KindReserve {
		limit = (w.queueSize + 1) / 2
		e.Replica = w.replica
	}
	now := time.Now()
	w.mu.Lock()
	if len(w.queue) >= limit {
		w.mu.Unlock()
		w.dropped.Add(1)
		return 0, false
	}
	w.queue = append(w.queue, e)
	w.queuedAt = append(w.queuedAt, now)
	if e.Kind == KindSettle {
		w.pending[e.AccountID] += e.AmountMicroUSD
	}
	w.enqueued++
	seq, done := w.enqueued, w.done
	full := len(w.queue) >= w.batchSize
	w.mu.Unlock()
	if full {
		w.kick()
	}
	if e.Kind == KindSettle {
		w.journalSettle(&e, seq, done)
	}
	return seq, true
}

// journalSettle appends the settle e (queued as number seq; done is the last entry the store
// holds) to the journal, when there is one, so that a crash before its batch commits loses no
// served request's bill: the replay writes it, at its cost (and it reached the journal before
// the shared admission store charged it: billing.Reservation.Settle). A failure is logged at
// most once a second; the settle stays queued.
func (w *Writer) journalSettle(e *LedgerEntry, seq, done uint64) {
	if w.journal == nil {
		return
	}
	if err := w.journal.Log(*e, seq, done); err != nil {
		w.journalFailed("a settle could not be journaled, and a crash before its batch commits loses it", err)
	}
}

// journalFailed logs a journal write failure, at most once a second.
func (w *Writer) journalFailed(what string, err error) {
	last := w.journalLogged.Load()
	if now := time.Now().UnixNano(); now-last >= int64(time.Second) && w.journalLogged.CompareAndSwap(last, now) {
		w.logf("accounts: the ledger journal cannot be written; %s: %v", what, err)
	}
}

// AppendWait queues e like Append and waits until it is written (its batch committed), so that
// it survives a crash of this process from then on: the request path makes a request's reserve
// entry durable this way before dispatch (the crash reconciliation finds it if the settle is
// lost; Reconciler). The writer is woken at once, and the entries of concurrent callers share
// one transaction (a group commit). It returns ErrLedgerDropped when the queue is full (nothing
// queued), or ctx's error when ctx is done first: the entry stays queued then, and is written
// when the store answers.
func (w *Writer) AppendWait(ctx context.Context, e LedgerEntry) error {
	seq, ok := w.append(e)
	if !ok {
		return ErrLedgerDropped
	}
	w.kick()
	return w.waitDone(ctx, seq)
}

// Reserve queues the reserve entry e (KindReserve) like Append, without waiting, and returns
// its ticket for Secure and End; false when it was shed (a half-full queue: no trace is
// queued, and no release should follow).
func (w *Writer) Reserve(e LedgerEntry) (Ticket, bool) {
	e.Kind = KindReserve
	seq, ok := w.append(e)
	return Ticket{seq}, ok
}

// Secure makes the reserve of t (the entry e given to Reserve) survive a crash of this process
// (issue 24 item 1: the request path calls it at its commit, the first byte to the caller,
// never before dispatch). With a Journal it appends e to the journal file: one write(2), no
// store commit waited for; without one it waits for the group commit that carries the entry
// (the writer is woken at once; concurrent callers share the transaction), or for ctx. A
// reserve already in the store returns at once. optional says the request holds no money:
// while the writer lags more than LagWarning it does not wait (nil).
func (w *Writer) Secure(ctx context.Context, t Ticket, e *LedgerEntry, optional bool) error {
	w.mu.Lock()
	done := w.done
	w.mu.Unlock()
	if t.seq <= done {
		return nil
	}
	if w.journal != nil {
		je := *e
		je.Kind, je.Replica = KindReserve, w.replica
		err := w.journal.Log(je, t.seq, done)
		if err != nil { // logged: the 503 a caller gets does not say why
			w.journalFailed("requests that hold money are refused until it can", err)
		}
		return err
	}
	if optional && w.Lag() > LagWarning {
		return nil
	}
	w.kick()
	return w.waitDone(ctx, t.seq)
}

// End queues e, the settle or release that ends the reserve of t, without waiting. When that
// reserve is still queued and not yet taken into a batch, e takes its place: one row reaches
// the store instead of two, and ledger_open is not touched (issue 27 item 2: an entry written
// and ended within one batch reaches the disk once). The crash trace holds either way: e is
// then written in the reserve's batch, and the journal keeps the reserve until that batch is
// committed. It reports false when e was shed (a full queue).
func (w *Writer) End(t Ticket, e LedgerEntry) bool {
	w.mu.Lock()
	if t.seq > w.done {
		i := int(t.seq - w.done - 1)
		if i >= w.inflight && i < len(w.queue) && w.queue[i].Kind == KindReserve && w.queue[i].RequestID == e.RequestID {
			e.Replica = ""
			w.queue[i] = e
			done := w.done
			if e.Kind == KindSettle {
				w.pending[e.AccountID] += e.AmountMicroUSD
			}
			w.mu.Unlock()
			if e.Kind == KindSettle {
				w.journalSettle(&e, t.seq, done)
			}
			return true
		}
	}
	w.mu.Unlock()
	return w.Append(e)
}

// ErrLedgerDropped: AppendWait's entry was not queued (the queue is full).
var ErrLedgerDropped = errors.New("accounts: the ledger queue is full")

// Lag returns how long the oldest entry still queued has waited, 0 when none is: the
// writer's lag behind the request path (switchyard_ledger_writer_lag_seconds).
func (w *Writer) Lag() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queuedAt) == 0 {
		return 0
	}
	return time.Since(w.queuedAt[0])
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

// HoldPending keeps every settle counted by Pending until release is called, even when its
// batch is committed meanwhile. A reader that reads an account's stored balance and then
// subtracts Pending (Cache.Reload) holds across both reads: a settle committed between them is
// then subtracted twice (a balance briefly low, corrected by the next reload) and never not at
// all (a balance high by the settles committed during the read: an overspend of a prepaid
// account, R-BILL-1). release is idempotent.
func (w *Writer) HoldPending() (release func()) {
	w.mu.Lock()
	w.holds++
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			if w.holds--; w.holds == 0 {
				for i := range w.deferred {
					w.unpendLocked(&w.deferred[i])
				}
				clear(w.deferred)
				w.deferred = w.deferred[:0]
			}
			w.mu.Unlock()
		})
	}
}

// unpendLocked removes a written settle from pending. w.mu must be held.
func (w *Writer) unpendLocked(e *LedgerEntry) {
	if w.pending[e.AccountID] -= e.AmountMicroUSD; w.pending[e.AccountID] == 0 {
		delete(w.pending, e.AccountID)
	}
}

// Dropped returns how many entries will never be written: offered to a full queue (a reserve
// entry: to a half-full one), or still queued when a drain timed out.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Flush blocks until every entry queued before the call is written. It returns ctx.Err() if
// ctx is done first, which it will be when Run is not running or the store keeps failing.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	target := w.enqueued
	w.mu.Unlock()
	return w.waitDone(ctx, target)
}

// waitDone blocks until every entry numbered <= target is written or lost, or ctx is done.
func (w *Writer) waitDone(ctx context.Context, target uint64) error {
	w.mu.Lock()
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
	window := w.flushEvery
	tick := time.NewTimer(window)
	defer tick.Stop()
	for {
		timed := false
		select {
		case <-ctx.Done():
			err := w.drain(ctx)
			if w.journal != nil {
				err = errors.Join(err, w.journal.Close(err == nil))
			}
			return err
		case <-tick.C:
			timed = true
			w.warnLag()
		case <-w.kickc:
		}
		written := 0
		for ctx.Err() == nil {
			n, err := w.writeBatch(ctx)
			w.warnLag()
			if err != nil {
				w.logErr(err)
				written = 0 // retried at the next tick (the window shrinks meanwhile)
				break
			}
			if n == 0 {
				break
			}
			written += n
		}
		if timed {
			window = batch.NextWindow(window, w.flushEvery, w.maxFlush, written, windowGrowBatch)
			tick.Reset(window)
		}
	}
}

// drain writes until the queue is empty or the drain times out; what is left is dropped.
func (w *Writer) drain(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.drainTimeout)
	defer cancel()
	for dctx.Err() == nil {
		n, err := w.writeBatch(dctx)
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
		if n == 0 {
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
	w.queuedAt = w.queuedAt[:0]
	clear(w.pending)
	w.advance(w.enqueued)
	w.dropped.Add(uint64(n))
	return fmt.Errorf("accounts: %d ledger entries not written at shutdown: drain timed out after %v", n, w.drainTimeout)
}

// writeBatch writes the oldest entries, up to BatchSize, in one AppendLedger. It returns how
// many it wrote (0: none was queued), and the store's error (the entries stay queued).
func (w *Writer) writeBatch(ctx context.Context) (int, error) {
	w.mu.Lock()
	n := min(len(w.queue), w.batchSize)
	if n == 0 {
		w.mu.Unlock()
		return 0, nil
	}
	w.batch = append(w.batch[:0], w.queue[:n]...)
	w.inflight = n
	w.mu.Unlock()

	if err := w.st.AppendLedger(ctx, w.batch); err != nil {
		w.mu.Lock()
		w.inflight = 0
		w.mu.Unlock()
		return n, err
	}

	w.mu.Lock()
	w.inflight = 0
	rest := copy(w.queue, w.queue[n:])
	clear(w.queue[rest:])
	w.queue = w.queue[:rest]
	copy(w.queuedAt, w.queuedAt[n:])
	w.queuedAt = w.queuedAt[:rest]
	for i := range w.batch {
		if e := &w.batch[i]; e.Kind == KindSettle {
			if w.holds > 0 {
				w.deferred = append(w.deferred, *e)
			} else {
				w.unpendLocked(e)
			}
		}
	}
	w.advance(w.enqueued - uint64(rest))
	w.mu.Unlock()
	return n, nil
}

// windowGrowBatch is the batch, entries, from which a timed write doubles the commit window
// (WriterOptions.MaxFlushInterval).
const windowGrowBatch = 64

// advance marks every entry numbered <= seq done and wakes Flush. w.mu must be held.
func (w *Writer) advance(seq uint64) {
	w.done = seq
	close(w.progress)
	w.progress = make(chan struct{})
}

// warnLag logs a warning when the oldest queued entry has waited longer than LagWarning, at
// most once per 10 s.
func (w *Writer) warnLag() {
	lag := w.Lag()
	if lag <= LagWarning {
		return
	}
	if now := time.Now(); now.Sub(w.lastLag) >= 10*time.Second {
		w.mu.Lock()
		n := len(w.queue)
		w.mu.Unlock()
		w.logf("WARNING: accounts: the ledger writer is %v behind (%d entries queued): %s", lag.Round(time.Millisecond), n, w.lagRisk())
		w.lastLag = now
	}
}

// lagRisk says what a crash while the writer lags would cost: with a journal, nothing (every
// settle is in it), without one the settles queued.
func (w *Writer) lagRisk() string {
	if w.journal != nil {
		return "the journal holds their settles and secured reserves, so a crash now loses no bill"
	}
	return "a crash now would lose their settles to the reconciliation"
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
