package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeStore records every WriteRecords call. When gate is non-nil, WriteRecords waits for a
// value from it (or for ctx) before writing.
type fakeStore struct {
	gate chan struct{}
	err  error // returned by WriteRecords when non-nil

	mu    sync.Mutex
	sizes []int // records per WriteRecords call
	recs  map[string]*Record
}

func newFakeStore() *fakeStore { return &fakeStore{recs: map[string]*Record{}} }

func (s *fakeStore) WriteRecords(ctx context.Context, recs []*Record) error {
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sizes = append(s.sizes, len(recs))
	if s.err != nil {
		return s.err
	}
	for _, r := range recs {
		s.recs[r.RequestID] = r.Clone()
	}
	return nil
}

func (s *fakeStore) Record(_ context.Context, id string) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.recs[id]; ok {
		return r.Clone(), nil
	}
	return nil, ErrNotFound
}

func (s *fakeStore) stats() (calls, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.sizes {
		total += n
	}
	return len(s.sizes), total
}

func rec(i int) *Record {
	return &Record{RequestID: fmt.Sprintf("req_%d", i), Model: "m", Status: 200,
		Attempts: []Attempt{{Attempt: 1, Deployment: "d", DroppedParams: []string{"seed"}}}}
}

// run starts r.Run and returns a function that cancels it and returns its error.
func run(r *Recorder) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	return func() error { cancel(); return <-errc }
}

// TestBatching: many records become few store transactions, none larger than BatchSize, and
// a partial batch is written when Flush asks for it.
func TestBatching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore()
		r := NewRecorder(st, Options{QueueSize: 5000, BatchSize: 100})
		stop := run(r)
		for i := range 1050 {
			r.Record(rec(i))
		}
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		// No virtual time passed, so no tick: only full batches, then Flush's partial one.
		want := append(slices.Repeat([]int{100}, 10), 50)
		if !slices.Equal(st.sizes, want) {
			t.Errorf("batch sizes = %v, want %v", st.sizes, want)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if d := r.Dropped(); d != 0 {
			t.Errorf("Dropped = %d, want 0", d)
		}
	})
}

// TestFlushInterval: a lone record is written after FlushInterval without Flush.
func TestFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore()
		r := NewRecorder(st, Options{FlushInterval: 50 * time.Millisecond})
		stop := run(r)
		r.Record(rec(1))
		time.Sleep(40 * time.Millisecond)
		synctest.Wait()
		if calls, _ := st.stats(); calls != 0 {
			t.Fatalf("written before FlushInterval: %d calls", calls)
		}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if calls, total := st.stats(); calls != 1 || total != 1 {
			t.Fatalf("after FlushInterval: calls=%d records=%d, want 1 and 1", calls, total)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSlowStore: with the store blocked, Record still returns at once (R-AUDIT is never on the
// request's critical path), a full queue drops and counts, the drop is logged at most once per
// second, and Lookup finds records queued or in flight.
func TestSlowStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore()
		st.gate = make(chan struct{})
		var (
			logMu sync.Mutex
			logs  []string
		)
		logf := func(f string, a ...any) {
			logMu.Lock()
			logs = append(logs, fmt.Sprintf(f, a...))
			logMu.Unlock()
		}
		r := NewRecorder(st, Options{QueueSize: 10, BatchSize: 5, Logf: logf})
		stop := run(r)
		for i := range 5 {
			r.Record(rec(i))
		}
		synctest.Wait() // the writer is now blocked inside WriteRecords with records 0..4
		start := time.Now()
		for i := 5; i < 18; i++ { // 10 fit in the queue, 3 are dropped
			r.Record(rec(i))
		}
		if time.Since(start) != 0 {
			t.Errorf("Record waited %v for a blocked store", time.Since(start))
		}
		if d := r.Dropped(); d != 3 {
			t.Errorf("Dropped = %d, want 3", d)
		}
		for _, id := range []string{"req_0", "req_4", "req_5", "req_14"} { // in flight, queued
			got, err := r.Lookup(t.Context(), id)
			if err != nil || got.RequestID != id || got.Attempts[0].DroppedParams[0] != "seed" {
				t.Errorf("Lookup(%s) = %+v, %v", id, got, err)
			}
		}
		if _, err := r.Lookup(t.Context(), "req_15"); !errors.Is(err, ErrNotFound) { // dropped
			t.Errorf("Lookup of a dropped record: err = %v, want ErrNotFound", err)
		}

		close(st.gate) // unblock every write
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, total := st.stats(); total != 15 {
			t.Errorf("stored %d records, want 15", total)
		}
		synctest.Wait()
		r.Record(&Record{}) // no request id: dropped
		r.kick()
		synctest.Wait()
		logMu.Lock()
		if len(logs) != 1 || !strings.Contains(logs[0], "3 records dropped") {
			t.Errorf("logs = %q, want one line reporting 3 drops", logs)
		}
		logMu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		logMu.Lock()
		if len(logs) != 2 || !strings.Contains(logs[1], "1 records dropped") {
			t.Errorf("logs = %q, want a second line reporting 1 drop after a second", logs)
		}
		logMu.Unlock()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLookup: queued records are found before they are written, written ones from the store,
// and unknown ids are ErrNotFound.
func TestLookup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore()
		r := NewRecorder(st, Options{})
		r.Record(rec(1)) // Run is not running: the record stays queued
		got, err := r.Lookup(t.Context(), "req_1")
		if err != nil || got.RequestID != "req_1" {
			t.Fatalf("Lookup of a queued record = %+v, %v", got, err)
		}
		got.Attempts[0].DroppedParams[0] = "changed" // a copy: the queued record is unchanged
		stop := run(r)
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, total := st.stats(); total != 1 {
			t.Fatalf("stored %d records, want 1", total)
		}
		got, err = r.Lookup(t.Context(), "req_1")
		if err != nil || got.Attempts[0].DroppedParams[0] != "seed" {
			t.Errorf("Lookup after write = %+v, %v", got, err)
		}
		for _, id := range []string{"req_2", ""} {
			if _, err := r.Lookup(t.Context(), id); !errors.Is(err, ErrNotFound) {
				t.Errorf("Lookup(%q): err = %v, want ErrNotFound", id, err)
			}
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRunFlushesOnCancel: records queued but not yet due are written when Run's context ends.
func TestRunFlushesOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore()
		r := NewRecorder(st, Options{BatchSize: 5})
		stop := run(r)
		for i := range 7 {
			r.Record(rec(i))
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if calls, total := st.stats(); total != 7 || calls != 2 {
			t.Errorf("after cancel: %d records in %d calls, want 7 in 2", total, calls)
		}
		if _, err := r.Lookup(t.Context(), "req_6"); err != nil {
			t.Errorf("Lookup after drain: %v", err)
		}
	})
}

// TestRunDrainTimeout: a hung store cannot hold shutdown beyond DrainTimeout; what is left
// is counted as dropped and reported.
func TestRunDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore()
		st.gate = make(chan struct{}) // never opened
		r := NewRecorder(st, Options{BatchSize: 2, DrainTimeout: 3 * time.Second})
		stop := run(r)
		for i := range 5 {
			r.Record(rec(i))
		}
		synctest.Wait() // writer blocked on the first batch
		start := time.Now()
		err := stop()
		if err == nil || !strings.Contains(err.Error(), "3 records not written") {
			t.Errorf("Run = %v, want an error counting 3 unwritten records", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("shutdown took %v, want the 3s DrainTimeout", d)
		}
		if d := r.Dropped(); d != 5 {
			t.Errorf("Dropped = %d, want 5 (2 failed in flight, 3 never written)", d)
		}
		if err := r.Flush(t.Context()); err != nil { // nothing is left pending
			t.Errorf("Flush after shutdown: %v", err)
		}
	})
}

// TestStoreError: a failed batch is counted as dropped, logged, and does not hold Flush.
func TestStoreError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore()
		st.err = errors.New("disk full")
		var logs []string
		r := NewRecorder(st, Options{Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
		stop := run(r)
		r.Record(rec(1))
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if r.Dropped() != 1 {
			t.Errorf("Dropped = %d, want 1", r.Dropped())
		}
		if len(logs) != 1 || !strings.Contains(logs[0], "disk full") {
			t.Errorf("logs = %q, want the store error", logs)
		}
		if _, err := r.Lookup(t.Context(), "req_1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Lookup of a lost record: %v, want ErrNotFound", err)
		}
	})
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRecorder(newFakeStore(), Options{})
		stop := run(r)
		synctest.Wait()
		if err := r.Run(t.Context()); err == nil {
			t.Error("a second concurrent Run returned nil")
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFlushWithoutRun(t *testing.T) {
	r := NewRecorder(newFakeStore(), Options{})
	if err := r.Flush(t.Context()); err != nil { // nothing queued: returns at once
		t.Fatal(err)
	}
	r.Record(rec(1))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Flush without Run = %v, want context.Canceled", err)
	}
}

// nopStore accepts every batch.
type nopStore struct{}

func (nopStore) WriteRecords(context.Context, []*Record) error { return nil }
func (nopStore) Record(context.Context, string) (*Record, error) {
	return nil, ErrNotFound
}

// BenchmarkRecord measures the request-path cost of Record. "enqueue": one goroutine, the
// queue emptied outside the timer every QueueSize records, so every call takes the accepting
// path. "drain": the same with the emptying timed (enqueue plus the writer's own cost). "parallel": GOMAXPROCS goroutines with the writer draining into a store that does
// nothing; dropped/op is the share the single writer could not keep up with at that rate.
func BenchmarkRecord(b *testing.B) {
	recs := make([]*Record, DefaultQueueSize)
	for i := range recs {
		recs[i] = rec(i)
	}
	b.Run("enqueue", func(b *testing.B) {
		r := NewRecorder(nopStore{}, Options{})
		b.ReportAllocs()
		for i := range b.N {
			if i%len(recs) == 0 && i > 0 {
				b.StopTimer()
				r.flushTo = r.enqueued
				for r.writeBatch(context.Background()) > 0 {
				}
				b.StartTimer()
			}
			r.Record(recs[i%len(recs)])
		}
		if r.Dropped() != 0 {
			b.Fatalf("%d dropped", r.Dropped())
		}
	})
	b.Run("drain", func(b *testing.B) { // the writer's own cost per record, store excluded
		r := NewRecorder(nopStore{}, Options{})
		b.ReportAllocs()
		for i := range b.N {
			if i%len(recs) == 0 && i > 0 {
				r.flushTo = r.enqueued
				for r.writeBatch(context.Background()) > 0 {
				}
			}
			r.Record(recs[i%len(recs)])
		}
	})
	b.Run("parallel", func(b *testing.B) {
		r := NewRecorder(nopStore{}, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = r.Run(ctx) }()
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				r.Record(recs[i%len(recs)])
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(r.Dropped())/float64(b.N), "dropped/op")
		cancel()
		<-done
	})
}
