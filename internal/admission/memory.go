package admission

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Memory is the in-memory [Store] of one gateway process: every counter sits behind one mutex,
// so Acquire's check-and-take over all layers is one critical section. It keeps the same
// semantics as the [Redis] store (the behaviour suite in admissiontest runs on both): sliding
// windows, leases for concurrency and reserves, budget spend per period and prepaid balances
// seeded from the ledger through a [Seeder]. Counters of a layer are created when the layer is
// first seen and kept for the life of the store (one small struct per key and account; the
// window keeps one entry per request of the last minute). Create it with NewMemory; it runs no
// goroutine and needs no Close.
type Memory struct {
	now    func() time.Time
	seeder Seeder

	mu       sync.Mutex
	layers   map[layerKey]*counters
	accounts map[string]*credit
	seq      uint64 // the last hold id
}

type layerKey struct {
	scope Scope
	id    string
}

// entry is one window entry: a request admitted at at (Unix nanoseconds) with its token
// charge, or (req false) a settle's token excess charged after its request left the window.
type entry struct {
	id     uint64
	at     int64
	tokens int64
	req    bool
}

// counters are one layer's state.
type counters struct {
	window           []entry // oldest first; ids increase along it
	requests, tokens int64   // over window
	inFlight         int64
	reserved         int64
	kind             Period // the budget period kind spend is counted in
	period           int64  // its index
	spent            int64
	seeded           bool // spent was read from the ledger for (kind, period)
	// seeding counts the seeds of (kind, period) being read. A settle that finds no seed adds
	// its cost to floatIDs under its request id (at most floatCap of them), which the seed adds
	// and reads the ledger without (so it counts once); one without a request id adds it to
	// float while a seed is read (the ledger read may have missed it, or counted it too).
	seeding  int
	float    int64
	floatIDs map[string]int64
}

// credit is a prepaid account's balance.
type credit struct {
	seeded            bool
	balance, reserved int64
	seeding           int   // as counters.seeding
	float             int64 // settles while a seed was read, subtracted from it
	// charged is every settle's cost charged to the account since the store was made
	// (micro-USD, only ever grows): SyncBalance subtracts what was charged after its mark.
	charged int64
}

// NewMemory returns an empty in-memory store reading time from now (nil is time.Now) and
// seeding spend and balances from seeder (nil: every counter starts at zero).
func NewMemory(now func() time.Time, seeder Seeder) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, seeder: seeder, layers: make(map[layerKey]*counters), accounts: make(map[string]*credit)}
}

// errTooManyLayers is a programming error: a request with more layers than a hold can track.
var errTooManyLayers = errors.New("admission: more than MaxLayers layers in one request")

// Acquire implements [Store.Acquire]: it checks the prepaid balance, then, for each layer in
// order, rpm, tpm, concurrency and budget, and reports the first limit that does not fit; only
// when every limit fits does it take them all. A counter without a seed is seeded first, outside
// the lock, and the check starts again.
func (m *Memory) Acquire(ctx context.Context, req Request) (Hold, error) {
	if err := ctx.Err(); err != nil {
		return nil, failure.Wrap(failure.Cancelled, "the request was cancelled", err)
	}
	req.Layers = mergeLayers(req.Layers)
	if countLayers(req.Layers) > MaxLayers {
		return nil, failure.Wrap(failure.GatewayError, "internal error", errTooManyLayers)
	}
	for range MaxLayers + 2 { // a seed per budget and the balance, then the admission
		h, need, err := m.try(&req)
		if need == nil {
			return h, err
		}
		if err := m.seed(ctx, need); err != nil {
			return nil, err
		}
	}
	return nil, failure.Wrap(failure.GatewayError, "the admission store could not seed its counters", errors.New("admission: seeds keep vanishing"))
}

// countLayers counts the layers that limit something.
func countLayers(ls []Layer) int {
	n := 0
	for i := range ls {
		if !ls[i].Limits.IsZero() {
			n++
		}
	}
	return n
}

// seedNeed names one counter without a seed: a layer's spend in a period, or (layer nil) a
// prepaid account's balance.
type seedNeed struct {
	layer   *Layer
	account string
	from    time.Time
	kind    Period
	period  int64
}

// try is one attempt of Acquire under the lock; need is non-nil when a counter must be seeded.
func (m *Memory) try(req *Request) (Hold, *seedNeed, error) {
	now := m.now()
	tokens, reserve := max(req.Tokens, 0), max(req.ReserveMicroUSD, 0)
	m.mu.Lock()
	defer m.mu.Unlock()
	var cr *credit
	if req.CreditAccount != "" {
		cr = m.accounts[req.CreditAccount]
		if cr == nil || !cr.seeded {
			return nil, &seedNeed{account: req.CreditAccount}, nil
		}
		if avail := SubSat(cr.balance, cr.reserved); reserve > avail || avail <= 0 {
			return nil, nil, overCredit(reserve, avail)
		}
	}
	h := &memHold{m: m, tokens: tokens, reserve: reserve, credit: cr, rid: req.RequestID}
	for i := range req.Layers {
		l := &req.Layers[i]
		if l.Limits.IsZero() {
			continue
		}
		c := m.layer(l.Scope, l.ID)
		c.trim(now)
		c.roll(l.Limits.BudgetPeriod, now)
		if l.Limits.BudgetMicroUSD > 0 && !c.seeded {
			return nil, &seedNeed{layer: l, from: l.Limits.BudgetPeriod.Start(now), kind: c.kind, period: c.period}, nil
		}
		if err := c.check(l, tokens, reserve, now); err != nil {
			return nil, nil, err
		}
		h.layers[h.n] = c
		h.budget[h.n] = l.Limits.BudgetMicroUSD > 0
		h.n++
	}
	m.seq++
	h.id = m.seq
	at := now.UnixNano()
	for _, c := range h.layers[:h.n] {
		c.window = append(c.window, entry{id: h.id, at: at, tokens: tokens, req: true})
		c.requests++
		c.tokens = AddSat(c.tokens, tokens)
		c.inFlight++
		c.reserved = AddSat(c.reserved, reserve)
	}
	if cr != nil {
		cr.reserved = AddSat(cr.reserved, reserve)
	}
	return h, nil, nil
}

// seed reads one counter's seed from the seeder and sets it unless another Acquire did first.
// A spend's settles that found it without a seed are in its float under their request ids: the
// seed is the ledger read without them plus the float, so each counts once. A settle that joins
// the float during the read (which may or may not have counted it) makes the seed read again;
// after seedAttempts reads it is set all the same, high by those settles, never low. A settle
// without a request id that ends during the read is added (float, unkeyed): the read may have
// missed it, or counted it too (docs/limits.md "Exactness").
func (m *Memory) seed(ctx context.Context, need *seedNeed) error {
	for attempt := 1; ; attempt++ {
		again, err := m.seedOnce(ctx, need, attempt >= seedAttempts)
		if err != nil || !again {
			return err
		}
	}
}

// seedOnce is one read of seed; again reports that the float grew during it (and last was
// false): nothing was set.
func (m *Memory) seedOnce(ctx context.Context, need *seedNeed, last bool) (again bool, err error) {
	counted := false // this read is counted in seeding
	var exclude []string
	m.mu.Lock()
	if need.layer == nil {
		cr := m.accounts[need.account]
		if cr == nil {
			cr = new(credit)
			m.accounts[need.account] = cr
		}
		cr.seeding++
	} else if c := m.layer(need.layer.Scope, need.layer.ID); c.kind == need.kind && c.period == need.period {
		c.seeding++
		counted = true
		exclude = make([]string, 0, len(c.floatIDs))
		for id := range c.floatIDs {
			exclude = append(exclude, id)
		}
	}
	m.mu.Unlock()
	var v int64
	switch {
	case m.seeder == nil:
	case need.layer != nil:
		v, err = m.seeder.SpentMicroUSD(ctx, need.layer.Scope, need.layer.ID, need.from, exclude)
	default:
		v, err = m.seeder.BalanceMicroUSD(ctx, need.account, nil)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if need.layer == nil {
		cr := m.accounts[need.account]
		cr.seeding--
		if err == nil && !cr.seeded {
			cr.seeded, cr.balance = true, SubSat(v, cr.float)
		}
		if cr.seeding == 0 || cr.seeded {
			cr.float = 0
		}
	} else if c := m.layer(need.layer.Scope, need.layer.ID); counted && c.kind == need.kind && c.period == need.period {
		c.seeding--
		if err == nil && !c.seeded && len(c.floatIDs) != len(exclude) && !last {
			return true, nil
		}
		if err == nil && !c.seeded {
			v = AddSat(v, c.float)
			for _, f := range c.floatIDs {
				v = AddSat(v, f)
			}
			c.seeded, c.spent, c.floatIDs = true, v, nil // never added to later: a seed replaces nothing counted
		}
		if c.seeding == 0 || c.seeded {
			c.float = 0
		}
	}
	if err != nil {
		return false, seedError(ctx, err)
	}
	return false, nil
}

// seedError is the refusal of a request whose counter could not be read from the ledger.
func seedError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return failure.Wrap(failure.Cancelled, "the request was cancelled", err)
	}
	return failure.Wrap(failure.GatewayError, "the ledger could not be read to check this request's budget or credit; retry shortly", err)
}

// Usage implements [Store.Usage].
func (m *Memory) Usage(_ context.Context, l Layer) (Usage, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.layers[layerKey{l.Scope, l.ID}]
	if !ok {
		return Usage{}, nil
	}
	c.trim(now)
	c.roll(l.Limits.BudgetPeriod, now)
	return Usage{Requests: c.requests, Tokens: c.tokens, InFlight: c.inFlight, SpentMicroUSD: c.spent, ReservedMicroUSD: c.reserved}, nil
}

// Balance implements [Store.Balance].
func (m *Memory) Balance(_ context.Context, accountID string) (Balance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cr := m.accounts[accountID]
	if cr == nil {
		return Balance{}, nil
	}
	return Balance{Seeded: cr.seeded, BalanceMicroUSD: cr.balance, ReservedMicroUSD: cr.reserved}, nil
}

// Credit implements [Store.Credit].
func (m *Memory) Credit(_ context.Context, accountID string, deltaMicroUSD int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cr := m.accounts[accountID]; cr != nil && cr.seeded {
		cr.balance = AddSat(cr.balance, deltaMicroUSD)
	}
	return nil
}

// BalanceMarks returns each account's mark: how much has been charged to it so far, for
// SyncBalance. Take the marks before reading the balances to sync, at a point where every
// settle charged so far has its ledger entry queued (the server holds Biller.Settling).
func (m *Memory) BalanceMarks() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	marks := make(map[string]int64, len(m.accounts))
	for id, cr := range m.accounts {
		marks[id] = cr.charged
	}
	return marks
}

// SyncBalance replaces a seeded prepaid balance with balanceMicroUSD, the store of accounts'
// balance minus this process's settles not yet written, read after mark was taken
// (BalanceMarks; 0 for an account it did not list), less every settle charged since mark:
// those the read may have missed. The periodic reload of a replica that runs without a shared
// store calls it, so that credits made through another replica arrive; without the mark a
// settle charged between the read and the sync would be forgotten, and the balance spent twice.
// A settle charged after mark that the read did count (queued before the read of the writer's
// queue) is subtracted twice until the next reload: the balance errs low, never high. The
// shared store never needs it (its balance is the one all replicas charge).
func (m *Memory) SyncBalance(accountID string, balanceMicroUSD, mark int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cr := m.accounts[accountID]; cr != nil && cr.seeded {
		cr.balance = SubSat(balanceMicroUSD, cr.charged-mark)
	}
}

// layer returns the counters of a layer, creating them. m.mu must be held.
func (m *Memory) layer(scope Scope, id string) *counters {
	k := layerKey{scope, id}
	c, ok := m.layers[k]
	if !ok {
		c = &counters{period: -1}
		m.layers[k] = c
	}
	return c
}

// trim drops the window entries admitted Window or more before now.
func (c *counters) trim(now time.Time) {
	horizon := now.Add(-Window).UnixNano()
	n := 0
	for n < len(c.window) && c.window[n].at <= horizon {
		e := &c.window[n]
		c.tokens -= e.tokens
		if e.req {
			c.requests--
		}
		n++
	}
	if n > 0 {
		rest := copy(c.window, c.window[n:])
		c.window = c.window[:rest]
	}
}

// roll starts a new budget period, without a seed, when the period (or its kind) changed.
// Reserves and requests in flight carry over.
func (c *counters) roll(kind Period, now time.Time) {
	if p := kind.index(now); c.kind != kind || c.period != p {
		c.kind, c.period, c.spent, c.seeded, c.seeding, c.float, c.floatIDs = kind, p, 0, false, 0, 0, nil
	}
}

// untilOldest is the time until the oldest window entry leaves the window.
func (c *counters) untilOldest(now time.Time) time.Duration {
	if len(c.window) == 0 {
		return time.Second
	}
	return time.Duration(c.window[0].at + int64(Window) - now.UnixNano())
}

// check reports the first limit of l that one more request of tokens and reserve would break.
func (c *counters) check(l *Layer, tokens, reserve int64, now time.Time) error {
	lim := &l.Limits
	if lim.RPM > 0 && c.requests+1 > lim.RPM {
		return rateLimited(l, KindRPM, lim.RPM, c.untilOldest(now))
	}
	// A charge larger than the whole limit fits an empty window only (doc.go).
	if lim.TPM > 0 && AddSat(c.tokens, tokens) > lim.TPM && c.tokens > 0 {
		return rateLimited(l, KindTPM, lim.TPM, c.untilOldest(now))
	}
	if lim.Concurrency > 0 && c.inFlight+1 > lim.Concurrency {
		return rateLimited(l, KindConcurrency, lim.Concurrency, time.Second)
	}
	if b := lim.BudgetMicroUSD; b > 0 {
		if remaining := SubSat(SubSat(b, c.spent), c.reserved); reserve > remaining || remaining <= 0 {
			return overBudget(l, reserve, remaining)
		}
	}
	return nil
}

// find returns the window entry of the request with id, or nil when it left the window.
func (c *counters) find(id uint64) *entry {
	i := sort.Search(len(c.window), func(i int) bool { return c.window[i].id >= id })
	if i < len(c.window) && c.window[i].id == id && c.window[i].req {
		return &c.window[i]
	}
	return nil
}

// memHold is a Memory store's Hold. Its fields after Acquire are guarded by m.mu.
type memHold struct {
	m               *Memory
	id              uint64
	layers          [MaxLayers]*counters
	budget          [MaxLayers]bool // the layer had a budget at Acquire
	n               int
	credit          *credit
	rid             string // the ledger's request id (Request.RequestID), "" none
	tokens, reserve int64
	done            bool
}

// Settle implements [Hold.Settle].
func (h *memHold) Settle(actualTokens, actualCostMicroUSD int64) {
	h.end(true, max(actualTokens, 0), max(actualCostMicroUSD, 0))
}

// Release implements [Hold.Release].
func (h *memHold) Release() { h.end(false, 0, 0) }

func (h *memHold) end(settled bool, actualTokens, cost int64) {
	now := h.m.now()
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	for i, c := range h.layers[:h.n] {
		c.trim(now)
		c.inFlight--
		c.reserved -= h.reserve
		newTokens := int64(0) // R-BILL-2: a release returns the token charge
		if settled {
			newTokens = actualTokens
		}
		if e := c.find(h.id); e != nil { // still in the window: replace the charge
			c.tokens = AddSat(c.tokens, newTokens-e.tokens)
			e.tokens = newTokens
		} else if settled && actualTokens > h.tokens { // it left: charge only what the estimate missed
			h.m.seq++
			c.window = append(c.window, entry{id: h.m.seq, at: now.UnixNano(), tokens: actualTokens - h.tokens})
			c.tokens = AddSat(c.tokens, actualTokens-h.tokens)
		}
		if settled && h.budget[i] {
			c.roll(c.kind, now)
			switch {
			case c.seeded:
				c.spent = AddSat(c.spent, cost)
			case h.rid != "" && len(c.floatIDs) < floatCap: // the seed reads the ledger without it
				if c.floatIDs == nil {
					c.floatIDs = make(map[string]int64)
				}
				c.floatIDs[h.rid] = AddSat(c.floatIDs[h.rid], cost)
			case c.seeding > 0: // else its seed, read from the ledger, includes it, unless the read in progress missed it
				c.float = AddSat(c.float, cost)
			}
		}
	}
	if cr := h.credit; cr != nil {
		cr.reserved -= h.reserve
		if settled {
			cr.balance = SubSat(cr.balance, cost)
			cr.charged = AddSat(cr.charged, cost)
		}
	}
}

var (
	_ Store = (*Memory)(nil)
	_ Hold  = (*memHold)(nil)
)
