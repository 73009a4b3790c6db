package admission

import (
	"testing"
	"time"
)

// TestHealthWindow: the degraded mode is entered on a failure ratio over HealthWindow, not on
// one failed call (today one failed call skips Redis for a second), and left after
// HealthLeaveAfter successful probes in a row, one per HealthProbeEvery.
func TestHealthWindow(t *testing.T) {
	var h health
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for i := range 20 {
		h.record(at(time.Duration(i)*100*time.Millisecond), true)
	}
	if h.record(at(2*time.Second), false) != 0 || h.degraded.Load() || !h.allow(at(2*time.Second)) {
		t.Fatal("one failed call among successes entered the degraded mode")
	}
	// 4 more failures: 5 of 25 calls failed, under half.
	for i := range 4 {
		h.record(at(3*time.Second+time.Duration(i)*time.Millisecond), false)
	}
	if h.degraded.Load() {
		t.Fatal("5 failures of 25 calls entered the degraded mode")
	}
	// 11 s later the successes have left the window: 5 failures in a row enter it.
	var entered int
	for i := range 5 {
		entered += h.record(at(14*time.Second+time.Duration(i)*time.Millisecond), false)
	}
	if entered != 1 || !h.degraded.Load() {
		t.Fatalf("5 failures of 5 calls: entered %d, degraded %v", entered, h.degraded.Load())
	}
	now := at(14*time.Second + 10*time.Millisecond)
	if h.allow(now) {
		t.Error("a call went to Redis right after the degraded mode was entered")
	}
	left := 0
	for i := range HealthLeaveAfter {
		now = now.Add(HealthProbeEvery)
		if !h.allow(now) {
			t.Fatalf("probe %d not allowed", i)
		}
		if h.allow(now) {
			t.Fatal("two probes within one HealthProbeEvery")
		}
		left += h.record(now, true)
		if i < HealthLeaveAfter-1 && !h.degraded.Load() {
			t.Fatalf("left the degraded mode after %d probes", i+1)
		}
	}
	if left != -1 || h.degraded.Load() {
		t.Fatalf("after %d successful probes: left %d, degraded %v", HealthLeaveAfter, left, h.degraded.Load())
	}
	if h.record(now, false) != 0 || h.degraded.Load() {
		t.Error("one failure right after leaving entered the degraded mode again (the window was not cleared)")
	}
}

// TestShare: a limit's share on n replicas is limit/n rounded down.
func TestShare(t *testing.T) {
	for _, c := range []struct{ limit, n, want int64 }{{5, 3, 1}, {100, 3, 33}, {2, 3, 0}, {0, 3, 0}, {7, 1, 7}} {
		if got := share(c.limit, c.n); got != c.want {
			t.Errorf("share(%d, %d) = %d, want %d", c.limit, c.n, got, c.want)
		}
	}
}
