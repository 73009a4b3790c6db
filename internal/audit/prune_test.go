package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakePruner holds creation times; it fails the calls listed in failAt (1-based).
type fakePruner struct {
	mu      sync.Mutex
	created []time.Time
	calls   int
	failAt  map[int]bool
}

func (f *fakePruner) PruneRecords(_ context.Context, before time.Time, limit int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.failAt[f.calls] {
		return 0, errors.New("store down")
	}
	n := 0
	kept := f.created[:0]
	for _, c := range f.created {
		if n < limit && !c.IsZero() && c.Before(before) {
			n++
			continue
		}
		kept = append(kept, c)
	}
	f.created = kept
	return n, nil
}

func (f *fakePruner) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.created)
}

// TestPruneRounds: a round at once deletes everything older than the retention in batches; a
// store error ends the round (logged) and the next round, an interval later, goes on; records
// that age past the retention go in a later round; Prune returns when ctx is done.
func TestPruneRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := &fakePruner{failAt: map[int]bool{3: true}}
		for i := range 25 {
			f.created = append(f.created, start.Add(-48*time.Hour-time.Duration(i)*time.Minute))
		}
		f.created = append(f.created, start.Add(-23*time.Hour-30*time.Minute), time.Time{})
		var logs []string
		var mu sync.Mutex
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Prune(ctx, f, PruneOptions{Retention: 24 * time.Hour, Interval: time.Hour, BatchSize: 10,
				Logf: func(format string, args ...any) {
					mu.Lock()
					logs = append(logs, fmt.Sprintf(format, args...))
					mu.Unlock()
				}})
		}()
		time.Sleep(time.Second) // the pauses between batches
		synctest.Wait()
		if got := f.left(); got != 7 { // 2 batches of 10, then the error
			t.Errorf("after the first round: %d left, want 7", got)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if got := f.left(); got != 1 { // the rest, and the record that aged past 24 h; not the zero time
			t.Errorf("after the second round: %d left, want 1", got)
		}
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(logs) != 3 || !strings.Contains(logs[0], "store down") || !strings.Contains(logs[1], "pruned 20") ||
			!strings.Contains(logs[2], "pruned 6") {
			t.Errorf("logs %q", logs)
		}
	})
}

// TestPruneOff: a zero or negative retention prunes nothing and returns at once.
func TestPruneOff(t *testing.T) {
	f := &fakePruner{created: []time.Time{time.Unix(0, 1)}}
	Prune(context.Background(), f, PruneOptions{})
	Prune(context.Background(), f, PruneOptions{Retention: -time.Hour})
	if f.calls != 0 || f.left() != 1 {
		t.Errorf("%d calls, %d left", f.calls, f.left())
	}
}
