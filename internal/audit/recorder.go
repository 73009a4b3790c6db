package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-gw/switchyard/internal/batch"
)

// Defaults of Options.
const (
	DefaultQueueSize        = 4096
	DefaultBatchSize        = 1024
	DefaultFlushInterval    = 100 * time.Millisecond
	DefaultMaxFlushInterval = time.Second // 10 × DefaultFlushInterval
	DefaultDrainTimeout     = 5 * time.Second
)

// windowGrowBatch is the batch, records, from which a timed write doubles the commit window
// (Options.MaxFlushInterval): below it the store's per-commit cost (each B-tree's last pages
// rewritten whole) is paid by few records either way, and a short window keeps the call log
// fresh; above it a longer window makes fewer, larger commits (issue 27).
const windowGrowBatch = 64

// Options configure a Recorder. The zero value gives the defaults.
type Options struct {
	// QueueSize is how many records may wait to be written; a record offered to a full queue
	// is dropped. Zero or negative means DefaultQueueSize (4096). At most QueueSize records
	// are queued plus BatchSize in flight.
	QueueSize int
	// BatchSize is the most records written in one store transaction; a full batch is written
	// at once. Zero or negative means DefaultBatchSize (1024).
	BatchSize int
	// FlushInterval is the commit window at low load: the longest a record waits before its
	// batch is written, unless the store is slower than that. Zero or negative means
	// DefaultFlushInterval (100 ms).
	FlushInterval time.Duration
	// MaxFlushInterval is the longest the commit window grows to under load: after a timed
	// write of at least 64 records the window doubles, up to it, and after one of fewer than
	// 32 it halves, down to FlushInterval (issue 27: fewer, larger commits write fewer pages
	// per record; Lookup answers from the queue meanwhile, and no request waits for a commit).
	// Zero or negative means 10 × FlushInterval (DefaultMaxFlushInterval, 1 s, with the
	// default FlushInterval); below FlushInterval it is FlushInterval.
	MaxFlushInterval time.Duration
	// DrainTimeout bounds the final flush when Run's context is done, and a store write still
	// in flight then. Zero or negative means DefaultDrainTimeout (5 s).
	DrainTimeout time.Duration
	// Logf logs drops and store failures, at most once per second. Messages hold counts and
	// the store's error, never record content. Nil means no logging.
	Logf func(format string, args ...any)
}

// A Recorder queues audit records from the request path and writes them to a Store in batches.
// Record, Lookup, Dropped and Flush are safe for concurrent use; Run must be running for
// records to be written.
type Recorder struct {
	st           Store
	queueSize    int
	batchSize    int
	flushEvery   time.Duration
	maxFlush     time.Duration
	drainTimeout time.Duration
	logf         func(string, ...any)

	kickc   chan struct{} // capacity 1: write now (a batch is full or Flush waits)
	running atomic.Bool
	dropped atomic.Uint64 // rejected by a full queue, or lost to a failed write
	failed  atomic.Uint64 // the part of dropped lost to a failed write (for the log)

	mu sync.Mutex
	// guards the following fields
	queue    []*Record          // waiting to be written, oldest first; len <= queueSize
	pending  map[string]*Record // queued or in flight, by request id
	enqueued uint64             // sequence number of the last record queued (the first is 1)
	flushTo  uint64             // records numbered <= flushTo are written even as a partial batch
	done     uint64             // every record numbered <= done is written or lost
	progress chan struct{}      // closed, and replaced, whenever done advances
	lastErr  error              // the last store error, for the log

	// owned by the Run goroutine
	batch      []*Record
	lastLog    time.Time
	logDropped uint64
}

// NewRecorder returns a Recorder writing to st, which must not be nil. Call Run to start
// writing.
func NewRecorder(st Store, o Options) *Recorder {
	if st == nil {
		panic("audit: NewRecorder with a nil Store")
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.MaxFlushInterval <= 0 {
		o.MaxFlushInterval = 10 * o.FlushInterval
	}
	o.MaxFlushInterval = max(o.MaxFlushInterval, o.FlushInterval)
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Recorder{
		st:           st,
		queueSize:    o.QueueSize,
		batchSize:    o.BatchSize,
		flushEvery:   o.FlushInterval,
		maxFlush:     o.MaxFlushInterval,
		drainTimeout: o.DrainTimeout,
		logf:         o.Logf,
		kickc:        make(chan struct{}, 1),
		queue:        make([]*Record, 0, o.QueueSize),
		pending:      make(map[string]*Record, o.QueueSize+o.BatchSize),
		progress:     make(chan struct{}),
		batch:        make([]*Record, 0, o.BatchSize),
	}
}

// Record queues rec to be written and returns at once; it never waits for the store. When the
// queue is full, or rec has no RequestID, rec is dropped and counted in Dropped. The Recorder
// takes ownership of rec: the caller must not modify it afterwards. A nil rec is ignored.
func (r *Recorder) Record(rec *Record) {
	if rec == nil {
		return
	}
	r.mu.Lock()
	if len(r.queue) >= r.queueSize || rec.RequestID == "" {
		r.mu.Unlock()
		r.dropped.Add(1)
		return
	}
	r.queue = append(r.queue, rec)
	r.pending[rec.RequestID] = rec
	r.enqueued++
	full := len(r.queue) >= r.batchSize
	r.mu.Unlock()
	if full {
		r.kick()
	}
}

// kick wakes the Run goroutine without waiting.
func (r *Recorder) kick() {
	select {
	case r.kickc <- struct{}{}:
	default:
	}
}

// Dropped returns how many records will never be written: rejected by a full queue or for an
// empty RequestID, or lost to a failed store write.
func (r *Recorder) Dropped() uint64 { return r.dropped.Load() }

// Lookup returns a copy of the record for requestID: from the records queued or in flight if
// it is there (so a GET /v1/generation right after the response finds it), else from the
// store. It returns an error wrapping ErrNotFound when neither has it, or the store's error.
func (r *Recorder) Lookup(ctx context.Context, requestID string) (*Record, error) {
	if requestID == "" {
		return nil, ErrNotFound
	}
	r.mu.Lock()
	rec := r.pending[requestID]
	r.mu.Unlock()
	if rec != nil {
		return rec.Clone(), nil // records are immutable once queued
	}
	return r.st.Record(ctx, requestID)
}

// Flush blocks until every record queued before the call has been written (or lost to a
// failed write; see Dropped). It returns ctx.Err() if ctx is done first, which it will be if
// Run is not running.
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	target := r.enqueued
	r.flushTo = max(r.flushTo, target)
	for r.done < target {
		ch := r.progress
		r.mu.Unlock()
		r.kick()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		r.mu.Lock()
	}
	r.mu.Unlock()
	return nil
}

// Run writes queued records in batches of up to BatchSize: as soon as a batch is full, when
// Flush asks, and every FlushInterval otherwise. When ctx is done it writes what is still
// queued, within DrainTimeout, and returns. It returns nil when everything queued was written
// (or lost to a store error, which is logged and counted in Dropped), an error counting the
// records left unwritten when the drain timed out, or an error if Run is already running.
// Records queued after Run returns wait for the next Run.
func (r *Recorder) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("audit: Recorder.Run is already running")
	}
	defer r.running.Store(false)

	// Store writes use wctx: not cancelled by ctx, so a batch in flight at shutdown still
	// commits, but cancelled DrainTimeout after ctx is done, so a hung store cannot hold
	// shutdown.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	var (
		tmu   sync.Mutex
		timer *time.Timer
	)
	stop := context.AfterFunc(ctx, func() {
		tmu.Lock()
		timer = time.AfterFunc(r.drainTimeout, wcancel)
		tmu.Unlock()
	})
	defer func() {
		stop()
		tmu.Lock()
		if timer != nil {
			timer.Stop()
		}
		tmu.Unlock()
		wcancel()
	}()

	window := r.flushEvery
	tick := time.NewTimer(window)
	defer tick.Stop()
	for {
		timed := false
		select {
		case <-ctx.Done():
			return r.drain(wctx)
		case <-tick.C:
			timed = true
			r.mu.Lock()
			r.flushTo = max(r.flushTo, r.enqueued)
			r.mu.Unlock()
		case <-r.kickc:
		}
		n := 0
		for ctx.Err() == nil {
			k := r.writeBatch(wctx)
			if k == 0 {
				break
			}
			n += k
		}
		if timed {
			window = batch.NextWindow(window, r.flushEvery, r.maxFlush, n, windowGrowBatch)
			tick.Reset(window)
		}
		r.logLosses(false)
	}
}

// drain writes everything queued until the queue is empty or wctx is done; in the second
// case what is left is dropped.
func (r *Recorder) drain(wctx context.Context) error {
	r.mu.Lock()
	r.flushTo = r.enqueued
	r.mu.Unlock()
	for wctx.Err() == nil && r.writeBatch(wctx) > 0 {
	}
	r.logLosses(true)
	var err error
	r.mu.Lock()
	if n := len(r.queue); n > 0 && wctx.Err() != nil {
		for _, rec := range r.queue {
			r.forget(rec)
		}
		clear(r.queue)
		r.queue = r.queue[:0]
		r.advance(r.enqueued)
		r.dropped.Add(uint64(n))
		err = fmt.Errorf("audit: %d records not written at shutdown: drain timed out after %v", n, r.drainTimeout)
	}
	r.mu.Unlock()
	return err
}

// writeBatch writes the oldest queued records, up to BatchSize, in one store call: a full
// batch, or a partial one when a tick or Flush asked for its records (flushTo). It returns how
// many records it wrote (or lost to a store error), 0 when it wrote nothing.
func (r *Recorder) writeBatch(wctx context.Context) int {
	r.mu.Lock()
	n := min(len(r.queue), r.batchSize)
	head := r.enqueued - uint64(len(r.queue)) + 1 // sequence number of queue[0]
	if n == 0 || (n < r.batchSize && head > r.flushTo) {
		r.mu.Unlock()
		return 0
	}
	r.batch = append(r.batch[:0], r.queue[:n]...)
	rest := copy(r.queue, r.queue[n:])
	clear(r.queue[rest:])
	r.queue = r.queue[:rest]
	last := r.enqueued - uint64(rest)
	r.mu.Unlock()

	err := r.st.WriteRecords(wctx, r.batch)

	r.mu.Lock()
	for _, rec := range r.batch {
		r.forget(rec)
	}
	if err != nil {
		r.lastErr = err
		r.dropped.Add(uint64(n))
		r.failed.Add(uint64(n))
	}
	r.advance(last)
	r.mu.Unlock()
	clear(r.batch)
	return n
}

// forget removes rec from pending unless a later record with the same id replaced it there.
// r.mu must be held.
func (r *Recorder) forget(rec *Record) {
	if r.pending[rec.RequestID] == rec {
		delete(r.pending, rec.RequestID)
	}
}

// advance marks every record numbered <= seq as done and wakes Flush. r.mu must be held.
func (r *Recorder) advance(seq uint64) {
	r.done = seq
	close(r.progress)
	r.progress = make(chan struct{})
}

// logLosses logs records dropped since the last log, at most once per second unless final.
func (r *Recorder) logLosses(final bool) {
	d := r.dropped.Load()
	if d == r.logDropped {
		return
	}
	now := time.Now()
	if !final && now.Sub(r.lastLog) < time.Second {
		return
	}
	r.mu.Lock()
	lastErr := r.lastErr
	r.lastErr = nil
	r.mu.Unlock()
	if lastErr != nil {
		r.logf("audit: %d records dropped (%d lost to store errors in total; last: %v)", d-r.logDropped, r.failed.Load(), lastErr)
	} else {
		r.logf("audit: %d records dropped (queue full)", d-r.logDropped)
	}
	r.logDropped = d
	r.lastLog = now
}
