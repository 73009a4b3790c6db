package admission

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Memory is the in-memory [Store] of one gateway process: every counter sits behind one mutex,
// so Acquire's check-and-take over all layers is one critical section. Counters of a layer are
// created when the layer is first seen and kept for the life of the store (one small struct per
// key and account). Create it with NewMemory; it runs no goroutine and needs no Close.
type Memory struct {
	now    func() time.Time
	mu     sync.Mutex
	layers map[layerKey]*counters
}

type layerKey struct {
	scope Scope
	id    string
}

// counters are one layer's state. Window counts belong to minute; spent to (kind, period).
type counters struct {
	minute           int64 // Unix minute of the current window
	requests, tokens int64
	inFlight         int64
	kind             Period // the budget period kind spent is counted in
	period           int64  // its index
	spent, reserved  int64
}

// NewMemory returns an empty in-memory store reading time from now (nil is time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, layers: make(map[layerKey]*counters)}
}

// errTooManyLayers is a programming error: a request with more layers than a hold can track.
var errTooManyLayers = errors.New("admission: more than MaxLayers layers in one request")

// Acquire implements [Store.Acquire]: it checks, for each layer in order, rpm, tpm,
// concurrency and budget, and reports the first limit that does not fit; only when every limit
// of every layer fits does it take them all.
func (m *Memory) Acquire(ctx context.Context, req Request) (Hold, error) {
	if err := ctx.Err(); err != nil {
		return nil, failure.Wrap(failure.Cancelled, "the request was cancelled", err)
	}
	h := &memHold{m: m, tokens: max(req.Tokens, 0), reserve: max(req.ReserveMicroUSD, 0)}
	now := m.now()
	minute := floorDiv(now.Unix(), 60)

	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range req.Layers {
		l := &req.Layers[i]
		if l.Limits.IsZero() {
			continue
		}
		if h.n == MaxLayers {
			return nil, failure.Wrap(failure.GatewayError, "internal error", errTooManyLayers)
		}
		c := m.layer(l.Scope, l.ID)
		c.roll(minute, l.Limits.BudgetPeriod, now)
		if err := c.check(l, h.tokens, h.reserve, now); err != nil {
			return nil, err
		}
		h.layers[h.n] = c
		h.n++
	}
	for _, c := range h.layers[:h.n] {
		c.requests++
		c.tokens += h.tokens
		c.inFlight++
		c.reserved += h.reserve
	}
	h.minute = minute
	return h, nil
}

// Usage implements [Store.Usage]. The window counts are those of the current minute; spent is
// that of the current period of the kind the layer was last acquired with.
func (m *Memory) Usage(_ context.Context, scope Scope, id string) (Usage, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.layers[layerKey{scope, id}]
	if !ok {
		return Usage{}, nil
	}
	c.roll(floorDiv(now.Unix(), 60), c.kind, now)
	return Usage{Requests: c.requests, Tokens: c.tokens, InFlight: c.inFlight, SpentMicroUSD: c.spent, ReservedMicroUSD: c.reserved}, nil
}

// layer returns the counters of a layer, creating them. m.mu must be held.
func (m *Memory) layer(scope Scope, id string) *counters {
	k := layerKey{scope, id}
	c, ok := m.layers[k]
	if !ok {
		c = &counters{minute: -1 << 62, period: -1}
		m.layers[k] = c
	}
	return c
}

// roll starts a new window when the minute changed and a new budget period when the period
// (or its kind) changed. Reserves and requests in flight carry over.
func (c *counters) roll(minute int64, kind Period, now time.Time) {
	if c.minute != minute {
		c.minute, c.requests, c.tokens = minute, 0, 0
	}
	if p := kind.index(now); c.kind != kind || c.period != p {
		c.kind, c.period, c.spent = kind, p, 0
	}
}

// check reports the first limit of l that one more request of tokens and reserve would break.
func (c *counters) check(l *Layer, tokens, reserve int64, now time.Time) error {
	lim := &l.Limits
	untilNext := time.Unix((c.minute+1)*60, 0).Sub(now)
	if lim.RPM > 0 && c.requests+1 > lim.RPM {
		return rateLimited(l, KindRPM, lim.RPM, untilNext)
	}
	// A charge larger than the whole limit fits an empty window only (doc.go).
	if lim.TPM > 0 && c.tokens+tokens > lim.TPM && c.tokens > 0 {
		return rateLimited(l, KindTPM, lim.TPM, untilNext)
	}
	if lim.Concurrency > 0 && c.inFlight+1 > lim.Concurrency {
		return rateLimited(l, KindConcurrency, lim.Concurrency, time.Second)
	}
	if b := lim.BudgetMicroUSD; b > 0 {
		if remaining := b - c.spent - c.reserved; reserve > remaining || remaining <= 0 {
			return overBudget(l, reserve, remaining)
		}
	}
	return nil
}

// memHold is a Memory store's Hold. Its fields after Acquire are guarded by m.mu.
type memHold struct {
	m               *Memory
	layers          [MaxLayers]*counters
	n               int
	minute          int64 // the window the tokens were charged to
	tokens, reserve int64
	settled, done   bool
}

// Settle implements [Hold.Settle].
func (h *memHold) Settle(actualTokens, actualCostMicroUSD int64) {
	actualTokens, actualCostMicroUSD = max(actualTokens, 0), max(actualCostMicroUSD, 0)
	now := h.m.now()
	minute := floorDiv(now.Unix(), 60)
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if h.settled || h.done {
		return
	}
	h.settled = true
	for _, c := range h.layers[:h.n] {
		c.roll(minute, c.kind, now)
		switch {
		case c.minute == h.minute: // still the charged window: replace the charge
			c.tokens = max(c.tokens+actualTokens-h.tokens, 0)
		case actualTokens > h.tokens: // a later window: charge only what the estimate missed
			c.tokens += actualTokens - h.tokens
		}
		c.reserved -= h.reserve
		c.spent += actualCostMicroUSD
	}
}

// Release implements [Hold.Release].
func (h *memHold) Release() {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	for _, c := range h.layers[:h.n] {
		c.inFlight--
		if h.settled {
			continue
		}
		// R-BILL-2: nothing billed. The request still counts against rpm.
		c.reserved -= h.reserve
		if c.minute == h.minute {
			c.tokens = max(c.tokens-h.tokens, 0)
		}
	}
}

var (
	_ Store = (*Memory)(nil)
	_ Hold  = (*memHold)(nil)
)
