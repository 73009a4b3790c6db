package batch

import (
	"testing"
	"time"
)

// TestNextWindow: the commit window doubles after a timed write of at least grow entries, halves
// below grow/2, and stays between lo and hi (issue 27: larger commits under load, the short
// window back at low load).
func TestNextWindow(t *testing.T) {
	const lo, hi, grow = 100 * time.Millisecond, time.Second, 64
	for _, c := range []struct {
		w    time.Duration
		n    int
		want time.Duration
	}{
		{lo, grow, 2 * lo},
		{lo, 10 * grow, 2 * lo},
		{800 * time.Millisecond, grow, hi},
		{hi, 1000, hi},
		{hi, grow/2 - 1, hi / 2},
		{hi, 0, hi / 2},
		{lo, 0, lo},
		{400 * time.Millisecond, grow / 2, 400 * time.Millisecond},
		{400 * time.Millisecond, grow - 1, 400 * time.Millisecond},
	} {
		if got := NextWindow(c.w, lo, hi, c.n, grow); got != c.want {
			t.Errorf("NextWindow(%v, n=%d) = %v, want %v", c.w, c.n, got, c.want)
		}
	}
}
