package relay

import "time"

// Gaps are the inter-token gaps of a committed stream: the times between consecutive semantic
// events written to the caller (one event carries one delta, usually a token or a few). They are
// measured in the pump with one clock read per semantic event and observed once, when the
// request ends (/metrics switchyard_inter_token_gap_seconds). The zero value has seen nothing.
type Gaps struct {
	N    int           // gaps measured: semantic events written minus one
	Sum  time.Duration // the gaps' total
	Max  time.Duration // the longest gap
	last time.Time     // when the previous semantic event was written
}

// event notes a semantic event written at now.
func (g *Gaps) event(now time.Time) {
	if !g.last.IsZero() {
		d := now.Sub(g.last)
		g.N++
		g.Sum += d
		g.Max = max(g.Max, d)
	}
	g.last = now
}

// Mean is the mean gap; 0 when none was measured.
func (g *Gaps) Mean() time.Duration {
	if g.N == 0 {
		return 0
	}
	return g.Sum / time.Duration(g.N)
}
