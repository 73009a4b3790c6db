// Package admissiontest is the behaviour suite every admission.Store passes (the in-memory
// store always, the Redis store when SWITCHYARD_TEST_REDIS_URL is set): limits, sliding
// windows, leases, budgets per period, prepaid credit, exactly-once ends, and spend seeded
// from the ledger without double counting across restarts and flushes (R-BILL-1, R-BILL-2,
// R-BILL-4; docs/limits.md).
package admissiontest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Backend opens stores over one shared state.
type Backend struct {
	// Open returns a new store, as a new process would open it: over the backend's shared state
	// (Redis) or none (memory), reading time from now and seeds from seeder.
	Open func(t *testing.T, now func() time.Time, seeder admission.Seeder) admission.Store
	// Flush loses the shared state (Redis FLUSHDB of the test's keys); nil when the store has no
	// state outside its process.
	Flush func(t *testing.T)
}

// Clock is an injected clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts 15 s into the last minute of a month's last day (UTC).
func NewClock() *Clock { return &Clock{t: time.Date(2026, 11, 30, 23, 59, 15, 0, time.UTC)} }

// Now reads the clock.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Ledger is a fake ledger: the settles and balances the server would have written, read back
// as seeds. Safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	settles  []settle
	balances map[string]int64
	reads    atomic.Int64
	Fail     atomic.Bool // every read fails
	// DuringRead, when set, runs inside each SpentMicroUSD before the ledger is summed (a settle
	// that ends while a seed is read). Set it while no read runs.
	DuringRead func()
}

type settle struct {
	at      time.Time
	rid     string
	layers  []admission.Layer
	account string
	cost    int64
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{balances: make(map[string]int64)} }

// Settle records a settle of cost at at charged to layers and (when account is not "") taken
// from the account's balance.
func (l *Ledger) Settle(at time.Time, layers []admission.Layer, account string, cost int64) {
	l.SettleID(at, "", layers, account, cost)
}

// SettleID records a settle like Settle, under the request id rid (a seed's exclude names it).
func (l *Ledger) SettleID(at time.Time, rid string, layers []admission.Layer, account string, cost int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settles = append(l.settles, settle{at: at, rid: rid, layers: layers, account: account, cost: cost})
	if account != "" {
		l.balances[account] -= cost
	}
}

// Credit adds to an account's balance.
func (l *Ledger) Credit(account string, micro int64) {
	l.mu.Lock()
	l.balances[account] += micro
	l.mu.Unlock()
}

// Reads counts the seeds read.
func (l *Ledger) Reads() int64 { return l.reads.Load() }

var errLedgerDown = errors.New("ledger down")

// SpentMicroUSD implements admission.Seeder.
func (l *Ledger) SpentMicroUSD(_ context.Context, scope admission.Scope, id string, from time.Time, exclude []string) (int64, error) {
	l.reads.Add(1)
	if l.Fail.Load() {
		return 0, errLedgerDown
	}
	if l.DuringRead != nil {
		l.DuringRead()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum int64
	for _, s := range l.settles {
		if s.at.Before(from) || (s.rid != "" && slices.Contains(exclude, s.rid)) {
			continue
		}
		for _, ly := range s.layers {
			if ly.Scope == scope && ly.ID == id {
				sum += s.cost
				break
			}
		}
	}
	return sum, nil
}

// BalanceMicroUSD implements admission.Seeder.
func (l *Ledger) BalanceMicroUSD(_ context.Context, account string, exclude []string) (int64, error) {
	l.reads.Add(1)
	if l.Fail.Load() {
		return 0, errLedgerDown
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.balances[account]
	for _, s := range l.settles {
		if s.account == account && s.rid != "" && slices.Contains(exclude, s.rid) {
			b += s.cost
		}
	}
	return b, nil
}

// Run runs the suite on b.
func Run(t *testing.T, b Backend) {
	for _, tc := range []struct {
		name string
		f    func(*testing.T, Backend)
	}{
		{"Limits", testLimits},
		{"ZeroLimits", testZeroLimits},
		{"LayersAllOrNothing", testLayersAllOrNothing},
		{"WorkspaceScope", testWorkspaceScope},
		{"SameLayerTwice", testSameLayerTwice},
		{"SlidingWindow", testSlidingWindow},
		{"SettleCorrectsTokens", testSettleCorrectsTokens},
		{"ExactlyOnce", testExactlyOnce},
		{"BudgetPeriods", testBudgetPeriods},
		{"ConcurrentBudget", testConcurrentBudget},
		{"Credit", testCredit},
		{"ConcurrentCredit", testConcurrentCredit},
		{"RestartGrantsNothing", testRestart},
		{"SettleWithoutSeedCountsOnce", testSettleWithoutSeed},
		{"SettleAfterFlushCountsOnce", testSettleAfterFlush},
		{"Flush", testFlush},
		{"SettleDuringSeed", testSettleDuringSeed},
		{"SeedFailure", testSeedFailure},
		{"Cancelled", testCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, b) })
	}
}

func keyLayer(l admission.Limits) []admission.Layer {
	return []admission.Layer{{Scope: admission.ScopeKey, ID: "k", Limits: l}}
}

// refusal asserts err is a *failure.Error of class and kind, and returns it.
func refusal(t testing.TB, err error, class failure.Class, kind string) *failure.Error {
	t.Helper()
	var fe *failure.Error
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a *failure.Error %s/%s", err, class, kind)
	}
	if fe.Class != class || fe.LimitKind != kind {
		t.Fatalf("refusal = %s/%s (%q), want %s/%s", fe.Class, fe.LimitKind, fe.Msg, class, kind)
	}
	return fe
}

func usage(t testing.TB, s admission.Store, l admission.Layer) admission.Usage {
	t.Helper()
	u, err := s.Usage(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func acquire(t testing.TB, s admission.Store, req admission.Request) admission.Hold {
	t.Helper()
	h, err := s.Acquire(context.Background(), req)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	return h
}

// testLimits: R-BILL-1, each limit admits up to its value and refuses the next request with its
// class, limit kind and retry-after, taking nothing on a refusal.
func testLimits(t *testing.T, b Backend) {
	for _, tc := range []struct {
		name     string
		limits   admission.Limits
		req      admission.Request
		admitted int
		class    failure.Class
		kind     string
		retry    time.Duration
	}{
		{name: "rpm", limits: admission.Limits{RPM: 3}, admitted: 3, class: failure.RateLimited, kind: admission.KindRPM, retry: 50 * time.Second},
		{name: "tpm", limits: admission.Limits{TPM: 1000}, req: admission.Request{Tokens: 300}, admitted: 3, class: failure.RateLimited, kind: admission.KindTPM, retry: 50 * time.Second},
		{name: "concurrency", limits: admission.Limits{Concurrency: 2}, admitted: 2, class: failure.RateLimited, kind: admission.KindConcurrency, retry: time.Second},
		{name: "budget", limits: admission.Limits{BudgetMicroUSD: 1000}, req: admission.Request{ReserveMicroUSD: 400}, admitted: 2, class: failure.InsufficientCredit, kind: admission.KindBudget},
		{name: "budget exact fit", limits: admission.Limits{BudgetMicroUSD: 1200}, req: admission.Request{ReserveMicroUSD: 400}, admitted: 3, class: failure.InsufficientCredit, kind: admission.KindBudget},
		{name: "reserve above whole budget", limits: admission.Limits{BudgetMicroUSD: 100, BudgetPeriod: admission.PeriodTotal}, req: admission.Request{ReserveMicroUSD: 101}, class: failure.InsufficientCredit, kind: admission.KindBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := NewClock()
			s := b.Open(t, ck.Now, nil)
			req := tc.req
			req.Layers = keyLayer(tc.limits)
			for i := range tc.admitted {
				acquire(t, s, req)
				if i == 0 {
					ck.Advance(10 * time.Second) // the first leaves the window 50 s after this
				}
			}
			before := usage(t, s, req.Layers[0])
			_, err := s.Acquire(context.Background(), req)
			fe := refusal(t, err, tc.class, tc.kind)
			if fe.RetryAfter != tc.retry {
				t.Errorf("RetryAfter = %v, want %v", fe.RetryAfter, tc.retry)
			}
			if after := usage(t, s, req.Layers[0]); after != before {
				t.Errorf("a refusal took something: usage %+v -> %+v", before, after)
			}
		})
	}
}

// testZeroLimits: zero is no limit.
func testZeroLimits(t *testing.T, b Backend) {
	s := b.Open(t, NewClock().Now, nil)
	for range 100 {
		acquire(t, s, admission.Request{Layers: keyLayer(admission.Limits{}), Tokens: 1e9, ReserveMicroUSD: 1e12})
	}
}

// testLayersAllOrNothing: every layer is enforced and a refusal by one takes nothing from the
// others (the atomic check-and-take of R-BILL-1 and R-BILL-4).
func testLayersAllOrNothing(t *testing.T, b Backend) {
	s := b.Open(t, NewClock().Now, nil)
	acct := admission.Layer{Scope: admission.ScopeAccount, ID: "acme", Limits: admission.Limits{RPM: 2}}
	ka := admission.Layer{Scope: admission.ScopeKey, ID: "a", Limits: admission.Limits{RPM: 10}}
	a := []admission.Layer{ka, acct}
	bl := []admission.Layer{{Scope: admission.ScopeKey, ID: "b", Limits: admission.Limits{RPM: 10}}, acct}
	acquire(t, s, admission.Request{Layers: a})
	acquire(t, s, admission.Request{Layers: bl})
	_, err := s.Acquire(context.Background(), admission.Request{Layers: a})
	if fe := refusal(t, err, failure.RateLimited, admission.KindRPM); fe.Msg != "rate limit reached: this account allows 2 requests per minute" {
		t.Errorf("message %q", fe.Msg)
	}
	if u := usage(t, s, ka); u.Requests != 1 {
		t.Errorf("key a counted %d requests, want 1: the refused one was taken", u.Requests)
	}
	tight := []admission.Layer{{Scope: admission.ScopeKey, ID: "c", Limits: admission.Limits{Concurrency: 1}},
		{Scope: admission.ScopeAccount, ID: "other", Limits: admission.Limits{Concurrency: 5}}}
	acquire(t, s, admission.Request{Layers: tight})
	_, err = s.Acquire(context.Background(), admission.Request{Layers: tight})
	if fe := refusal(t, err, failure.RateLimited, admission.KindConcurrency); fe.Msg != "rate limit reached: this key allows 1 requests in flight" {
		t.Errorf("message %q", fe.Msg)
	}
	if u := usage(t, s, tight[1]); u.InFlight != 1 {
		t.Errorf("account in flight = %d, want 1", u.InFlight)
	}
}

// testSameLayerTwice: one layer limited by two sources in one request (a stored account's
// settings and the configured accounts[]) counts the request once, held to the tighter limits.
func testSameLayerTwice(t *testing.T, b Backend) {
	s := b.Open(t, NewClock().Now, nil)
	ly := []admission.Layer{
		{Scope: admission.ScopeAccount, ID: "acme", Limits: admission.Limits{RPM: 5, BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodTotal}},
		{Scope: admission.ScopeAccount, ID: "acme", Limits: admission.Limits{RPM: 3, Concurrency: 10}},
	}
	for range 3 {
		acquire(t, s, admission.Request{Layers: ly, ReserveMicroUSD: 100})
	}
	_, err := s.Acquire(context.Background(), admission.Request{Layers: ly, ReserveMicroUSD: 100})
	refusal(t, err, failure.RateLimited, admission.KindRPM)
	if u := usage(t, s, ly[0]); u.Requests != 3 || u.InFlight != 3 || u.ReservedMicroUSD != 300 {
		t.Errorf("usage %+v, want 3 requests, 3 in flight and 300 reserved (each request once)", u)
	}
}

// testWorkspaceScope: the same id under two scopes is two sets of counters, and refusals name
// the scope.
func testWorkspaceScope(t *testing.T, b Backend) {
	s := b.Open(t, NewClock().Now, nil)
	ws := admission.Layer{Scope: admission.ScopeWorkspace, ID: "x", Limits: admission.Limits{RPM: 1, BudgetMicroUSD: 10, BudgetPeriod: admission.PeriodTotal}}
	acct := admission.Layer{Scope: admission.ScopeAccount, ID: "x", Limits: admission.Limits{RPM: 5}}
	acquire(t, s, admission.Request{Layers: []admission.Layer{ws, acct}})
	if w, a := usage(t, s, ws), usage(t, s, acct); w.Requests != 1 || a.Requests != 1 {
		t.Fatalf("workspace counted %d, account %d requests; want 1 and 1", w.Requests, a.Requests)
	}
	_, err := s.Acquire(context.Background(), admission.Request{Layers: []admission.Layer{ws}})
	if fe := refusal(t, err, failure.RateLimited, admission.KindRPM); fe.Msg != "rate limit reached: this workspace allows 1 requests per minute" {
		t.Errorf("message %q", fe.Msg)
	}
	y := admission.Layer{Scope: admission.ScopeWorkspace, ID: "y", Limits: admission.Limits{BudgetMicroUSD: 10, BudgetPeriod: admission.PeriodTotal}}
	_, err = s.Acquire(context.Background(), admission.Request{Layers: []admission.Layer{y}, ReserveMicroUSD: 11})
	if fe := refusal(t, err, failure.InsufficientCredit, admission.KindBudget); fe.Msg !=
		"insufficient budget: this workspace's budget of $0.000010 in total has $0.000010 left, and this request may cost up to $0.000011" {
		t.Errorf("message %q", fe.Msg)
	}
}

// testSlidingWindow: rpm and tpm count over a sliding minute: a request counts for exactly
// Window after it was admitted, so a burst at the end of one clock minute is not followed by a
// second burst at the start of the next (no 2x at a window edge), and the retry-after is the
// time until the oldest request leaves, clamped to 1..60 s.
func testSlidingWindow(t *testing.T, b Backend) {
	ck := NewClock()
	ck.Advance(44 * time.Second) // 23:59:59
	s := b.Open(t, ck.Now, nil)
	req := admission.Request{Layers: keyLayer(admission.Limits{RPM: 3, TPM: 1000}), Tokens: 10}
	for range 3 {
		acquire(t, s, req)
	}
	ck.Advance(2 * time.Second) // 00:00:01: a new clock minute, the same rolling minute
	_, err := s.Acquire(context.Background(), req)
	if fe := refusal(t, err, failure.RateLimited, admission.KindRPM); fe.RetryAfter != 58*time.Second {
		t.Errorf("retry-after %v, want 58s", fe.RetryAfter)
	}
	ck.Advance(57*time.Second + 500*time.Millisecond)
	_, err = s.Acquire(context.Background(), req)
	if fe := refusal(t, err, failure.RateLimited, admission.KindRPM); fe.RetryAfter != time.Second {
		t.Errorf("retry-after %v, want 1s (clamped)", fe.RetryAfter)
	}
	ck.Advance(500 * time.Millisecond) // exactly a minute after the burst
	for range 3 {
		acquire(t, s, req)
	}
	if u := usage(t, s, req.Layers[0]); u.Requests != 3 || u.Tokens != 30 {
		t.Errorf("usage %+v, want 3 requests and 30 tokens (the old burst left)", u)
	}

	// Any rolling minute holds at most the limit: requests spread over 3 minutes.
	ck2 := NewClock()
	s2 := b.Open(t, ck2.Now, nil)
	lim := admission.Request{Layers: []admission.Layer{{Scope: admission.ScopeKey, ID: "roll", Limits: admission.Limits{RPM: 10}}}}
	var admitted []time.Time
	for range 360 { // every 500 ms
		if _, err := s2.Acquire(context.Background(), lim); err == nil {
			admitted = append(admitted, ck2.Now())
		}
		ck2.Advance(500 * time.Millisecond)
	}
	for i := range admitted {
		n := 0
		for _, at := range admitted[i:] {
			if at.Sub(admitted[i]) < admission.Window {
				n++
			}
		}
		if n > 10 {
			t.Fatalf("%d requests admitted in the minute from %v; limit 10", n, admitted[i])
		}
	}
	if len(admitted) < 30 {
		t.Errorf("admitted %d over 3 minutes, want 30", len(admitted))
	}

	// tpm: a charge larger than the whole limit fits an empty window only.
	big := admission.Request{Layers: []admission.Layer{{Scope: admission.ScopeKey, ID: "big", Limits: admission.Limits{TPM: 100}}}, Tokens: 500}
	acquire(t, s, big)
	_, err = s.Acquire(context.Background(), big)
	refusal(t, err, failure.RateLimited, admission.KindTPM)
	ck.Advance(admission.Window)
	acquire(t, s, big)
}

// testSettleCorrectsTokens: the tpm charge is replaced by the actual usage at settle; a release
// returns it (R-BILL-2); a settle after its request left the window charges only the excess.
func testSettleCorrectsTokens(t *testing.T, b Backend) {
	ck := NewClock()
	s := b.Open(t, ck.Now, nil)
	req := admission.Request{Layers: keyLayer(admission.Limits{TPM: 1000}), Tokens: 600}
	h := acquire(t, s, req)
	if _, err := s.Acquire(context.Background(), req); err == nil {
		t.Fatal("600 + 600 > 1000 admitted")
	}
	h.Settle(150, 0)
	if u := usage(t, s, req.Layers[0]); u.Tokens != 150 || u.InFlight != 0 {
		t.Errorf("after settle: %+v, want 150 tokens, none in flight", u)
	}
	h2 := acquire(t, s, req)
	h2.Release()
	if u := usage(t, s, req.Layers[0]); u.Tokens != 150 || u.Requests != 2 {
		t.Errorf("after a release: %+v, want 150 tokens and 2 requests", u)
	}
	ck.Advance(admission.Window)
	h3 := acquire(t, s, admission.Request{Layers: req.Layers, Tokens: 100})
	ck.Advance(admission.Window)
	h3.Settle(130, 0)
	if u := usage(t, s, req.Layers[0]); u.Tokens != 30 || u.Requests != 0 {
		t.Errorf("settled after its window: %+v, want 30 tokens (the excess) and 0 requests", u)
	}
}

// testExactlyOnce: the first of Settle or Release ends a hold; the other, and a repeat, does
// nothing.
func testExactlyOnce(t *testing.T, b Backend) {
	s := b.Open(t, NewClock().Now, nil)
	req := admission.Request{Layers: keyLayer(admission.Limits{BudgetMicroUSD: 10_000, Concurrency: 5}), ReserveMicroUSD: 3000}
	h1 := acquire(t, s, req)
	h2 := acquire(t, s, req)
	if u := usage(t, s, req.Layers[0]); u != (admission.Usage{Requests: 2, InFlight: 2, ReservedMicroUSD: 6000}) {
		t.Errorf("after two acquires: %+v", u)
	}
	h1.Settle(0, 1234)
	h1.Settle(0, 9999)
	h1.Release()
	h2.Release()
	h2.Release()
	h2.Settle(0, 5000)
	want := admission.Usage{Requests: 2, SpentMicroUSD: 1234}
	if u := usage(t, s, req.Layers[0]); u != want {
		t.Errorf("usage = %+v, want %+v", u, want)
	}
}

// testBudgetPeriods: day and month budgets reset at the UTC period start, total never; a reserve
// outstanding across the reset stays reserved and its settle charges the new period.
func testBudgetPeriods(t *testing.T, b Backend) {
	for _, tc := range []struct {
		name    string
		period  admission.Period
		advance time.Duration
		reset   bool
	}{
		{"day same", admission.PeriodDay, 44 * time.Second, false},
		{"day next", admission.PeriodDay, 46 * time.Second, true},
		{"month next", admission.PeriodMonth, 46 * time.Second, true},
		{"total", admission.PeriodTotal, 400 * 24 * time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := NewClock()
			s := b.Open(t, ck.Now, nil)
			req := admission.Request{Layers: keyLayer(admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: tc.period}), ReserveMicroUSD: 600}
			acquire(t, s, req).Settle(0, 600)
			open := acquire(t, s, admission.Request{Layers: req.Layers, ReserveMicroUSD: 100})
			ck.Advance(tc.advance)
			h, err := s.Acquire(context.Background(), req)
			if tc.reset != (err == nil) {
				t.Fatalf("after %v: err = %v, want reset %v", tc.advance, err, tc.reset)
			}
			wantReserved := int64(100)
			if tc.reset {
				wantReserved = 700
			}
			if u := usage(t, s, req.Layers[0]); u.ReservedMicroUSD != wantReserved {
				t.Errorf("reserved = %d, want %d (the open reserve carries over)", u.ReservedMicroUSD, wantReserved)
			}
			open.Settle(0, 50)
			wantSpent := int64(650)
			if tc.reset {
				wantSpent = 50
				h.Release()
			}
			if u := usage(t, s, req.Layers[0]); u.SpentMicroUSD != wantSpent {
				t.Errorf("spent = %d, want %d", u.SpentMicroUSD, wantSpent)
			}
		})
	}
}

// testConcurrentBudget: R-BILL-1 under a burst: the budget is never exceeded and spent equals
// the sum of the settled costs exactly.
func testConcurrentBudget(t *testing.T, b Backend) {
	s := b.Open(t, NewClock().Now, nil)
	const (
		budget  = 50_000
		reserve = 3_000
		workers = 64
	)
	layers := []admission.Layer{
		{Scope: admission.ScopeKey, ID: "k", Limits: admission.Limits{BudgetMicroUSD: budget, BudgetPeriod: admission.PeriodTotal}},
		{Scope: admission.ScopeAccount, ID: "a", Limits: admission.Limits{BudgetMicroUSD: budget * 10, Concurrency: workers}},
	}
	var settled, admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for range 10 {
				h, err := s.Acquire(context.Background(), admission.Request{Layers: layers, ReserveMicroUSD: reserve})
				if err != nil {
					refusal(t, err, failure.InsufficientCredit, admission.KindBudget)
					refused.Add(1)
					continue
				}
				admitted.Add(1)
				if rng.IntN(4) == 0 {
					h.Release()
					continue
				}
				cost := rng.Int64N(reserve + 1)
				settled.Add(cost)
				h.Settle(0, cost)
			}
		})
	}
	wg.Wait()
	u := usage(t, s, layers[0])
	if u.SpentMicroUSD != settled.Load() || u.ReservedMicroUSD != 0 || u.SpentMicroUSD > budget {
		t.Errorf("key usage %+v; settled %d; budget %d", u, settled.Load(), budget)
	}
	if a := usage(t, s, layers[1]); a.SpentMicroUSD != settled.Load() || a.InFlight != 0 || a.ReservedMicroUSD != 0 {
		t.Errorf("account usage %+v; settled %d", a, settled.Load())
	}
	if refused.Load() == 0 || admitted.Load() == 0 {
		t.Errorf("admitted %d, refused %d: the test did not reach the budget", admitted.Load(), refused.Load())
	}
}

// testCredit: a prepaid balance is seeded from the ledger, reserved against, charged at settle,
// credited, and checked before the layers (a credit refusal takes nothing from them).
func testCredit(t *testing.T, b Backend) {
	led := NewLedger()
	led.Credit("acct", 1000)
	s := b.Open(t, NewClock().Now, led)
	ctx := context.Background()
	ly := keyLayer(admission.Limits{RPM: 100})
	req := admission.Request{Layers: ly, CreditAccount: "acct", ReserveMicroUSD: 400}
	h1 := acquire(t, s, req)
	h2 := acquire(t, s, req)
	_, err := s.Acquire(ctx, req)
	fe := refusal(t, err, failure.InsufficientCredit, admission.KindCredit)
	if fe.Msg != "insufficient credit: this prepaid account has $0.000200 available, and this request may cost up to $0.000400" {
		t.Errorf("message %q", fe.Msg)
	}
	if u := usage(t, s, ly[0]); u.Requests != 2 {
		t.Errorf("the credit refusal took from the key's rpm: %+v", u)
	}
	h1.Settle(0, 300)
	h2.Release()
	if bl, _ := s.Balance(ctx, "acct"); bl != (admission.Balance{Seeded: true, BalanceMicroUSD: 700}) {
		t.Errorf("balance %+v, want 700 and nothing reserved", bl)
	}
	if err := s.Credit(ctx, "acct", 500); err != nil {
		t.Fatal(err)
	}
	if err := s.Credit(ctx, "unseeded", 500); err != nil {
		t.Fatal(err)
	}
	if bl, _ := s.Balance(ctx, "acct"); bl.BalanceMicroUSD != 1200 {
		t.Errorf("balance after a credit %+v, want 1200", bl)
	}
	if bl, _ := s.Balance(ctx, "unseeded"); bl.Seeded {
		t.Errorf("a credit seeded a balance never read: %+v", bl)
	}
	// A settle above the reserve takes the balance below zero; nothing more is admitted.
	acquire(t, s, admission.Request{CreditAccount: "acct", ReserveMicroUSD: 1200}).Settle(0, 1500)
	if bl, _ := s.Balance(ctx, "acct"); bl.BalanceMicroUSD != -300 {
		t.Errorf("balance %+v, want -300", bl)
	}
	_, err = s.Acquire(ctx, admission.Request{CreditAccount: "acct"})
	refusal(t, err, failure.InsufficientCredit, admission.KindCredit)
}

// testConcurrentCredit: one shared balance under concurrent reserves never goes below what the
// settles above their reserves take.
func testConcurrentCredit(t *testing.T, b Backend) {
	led := NewLedger()
	led.Credit("acct", 20_000)
	s := b.Open(t, NewClock().Now, led)
	var settled atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 10 {
				h, err := s.Acquire(context.Background(), admission.Request{CreditAccount: "acct", ReserveMicroUSD: 1000})
				if err != nil {
					refusal(t, err, failure.InsufficientCredit, admission.KindCredit)
					continue
				}
				settled.Add(1000)
				h.Settle(0, 1000)
			}
		})
	}
	wg.Wait()
	bl, _ := s.Balance(context.Background(), "acct")
	if settled.Load() != 20_000 || bl.BalanceMicroUSD != 0 || bl.ReservedMicroUSD != 0 {
		t.Errorf("settled %d, balance %+v; want 20000 settled and 0 left", settled.Load(), bl)
	}
}

// testRestart: a store opened after another (a replica restarting, or a second replica) starts
// from the spend and balance the first left: restarting grants nothing, and seeding again
// counts nothing twice.
func testRestart(t *testing.T, b Backend) {
	ck := NewClock()
	led := NewLedger()
	led.Credit("acct", 10_000)
	ly := keyLayer(admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodDay})
	req := admission.Request{Layers: ly, CreditAccount: "acct", ReserveMicroUSD: 300}
	s1 := b.Open(t, ck.Now, led)
	for range 3 {
		acquire(t, s1, req).Settle(0, 300)
		led.Settle(ck.Now(), ly, "acct", 300) // the ledger writer, after the store
	}
	for range 3 {
		s := b.Open(t, ck.Now, led)
		if u := usage(t, s, ly[0]); b.Flush != nil && u.SpentMicroUSD != 900 {
			t.Errorf("shared spend after a restart = %d, want 900", u.SpentMicroUSD)
		}
		_, err := s.Acquire(context.Background(), req)
		refusal(t, err, failure.InsufficientCredit, admission.KindBudget)
		h := acquire(t, s, admission.Request{Layers: ly, CreditAccount: "acct", ReserveMicroUSD: 100})
		if u := usage(t, s, ly[0]); u.SpentMicroUSD != 900 || u.ReservedMicroUSD != 100 {
			t.Errorf("spend after a restart %+v, want 900 spent (never 1800, never 0)", u)
		}
		if bl, _ := s.Balance(context.Background(), "acct"); bl.BalanceMicroUSD != 9100 {
			t.Errorf("balance after a restart %+v, want 9100", bl)
		}
		h.Release()
	}
}

// testFlush: a shared store that lost its data (a Redis flush or restart) reseeds from the
// ledger: nothing counted twice, nothing lost that the ledger has.
func testFlush(t *testing.T, b Backend) {
	if b.Flush == nil {
		t.Skip("the store keeps no state outside its process (a restart is the flush: RestartGrantsNothing)")
	}
	ck := NewClock()
	led := NewLedger()
	led.Credit("acct", 10_000)
	ly := keyLayer(admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodMonth})
	s := b.Open(t, ck.Now, led)
	req := admission.Request{Layers: ly, CreditAccount: "acct", ReserveMicroUSD: 300}
	for range 2 {
		acquire(t, s, req).Settle(0, 300)
		led.Settle(ck.Now(), ly, "acct", 300)
	}
	reads := led.Reads()
	b.Flush(t)
	h := acquire(t, s, req)
	if led.Reads() != reads+2 {
		t.Errorf("seeds read after the flush: %d, want 2 (spend and balance)", led.Reads()-reads)
	}
	if u := usage(t, s, ly[0]); u.SpentMicroUSD != 600 || u.ReservedMicroUSD != 300 {
		t.Errorf("after the flush: %+v, want 600 spent and 300 reserved", u)
	}
	h.Settle(0, 300)
	led.Settle(ck.Now(), ly, "acct", 300)
	if bl, _ := s.Balance(context.Background(), "acct"); bl.BalanceMicroUSD != 9100 {
		t.Errorf("balance %+v, want 9100", bl)
	}
	_, err := s.Acquire(context.Background(), req)
	refusal(t, err, failure.InsufficientCredit, admission.KindBudget)
}

// testSeedFailure: a ledger that cannot be read refuses a metered request with a 503 and takes
// nothing; unmetered requests never read it.
func testSeedFailure(t *testing.T, b Backend) {
	led := NewLedger()
	led.Fail.Store(true)
	s := b.Open(t, NewClock().Now, led)
	ly := keyLayer(admission.Limits{RPM: 5, BudgetMicroUSD: 1000})
	_, err := s.Acquire(context.Background(), admission.Request{Layers: ly, ReserveMicroUSD: 10})
	if fe := failure.From(err); fe == nil || fe.Class != failure.GatewayError {
		t.Fatalf("err = %v, want a gateway_error", err)
	}
	if u := usage(t, s, ly[0]); u.Requests != 0 {
		t.Errorf("a refused request was counted: %+v", u)
	}
	acquire(t, s, admission.Request{Layers: keyLayer(admission.Limits{RPM: 5})})
}

// testCancelled: a done context is refused as cancelled, taking nothing.
func testCancelled(t *testing.T, b Backend) {
	s := b.Open(t, NewClock().Now, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Acquire(ctx, admission.Request{Layers: keyLayer(admission.Limits{RPM: 1})})
	if fe := failure.From(err); fe == nil || fe.Class != failure.Cancelled {
		t.Fatalf("err = %v", err)
	}
}

// testSettleDuringSeed: a request that settles while the new period's spend seed is being read
// from the ledger, its ledger entry not yet written (it is queued after the read), is counted
// by the seed: the store adds the settles that found no seed while one was read.
func testSettleDuringSeed(t *testing.T, b Backend) {
	ck := NewClock()
	led := NewLedger()
	ly := keyLayer(admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodDay})
	s := b.Open(t, ck.Now, led)
	h := acquire(t, s, admission.Request{Layers: ly, ReserveMicroUSD: 500})
	ck.Advance(time.Hour) // a new day: the spend has no seed
	var once sync.Once
	led.DuringRead = func() { once.Do(func() { h.Settle(0, 500) }) }
	_, err := s.Acquire(context.Background(), admission.Request{Layers: ly, ReserveMicroUSD: 600})
	led.DuringRead = nil
	led.Settle(ck.Now(), ly, "", 500) // the ledger writer flushes it after the read
	refusal(t, err, failure.InsufficientCredit, admission.KindBudget)
	if u := usage(t, s, ly[0]); u.SpentMicroUSD != 500 || u.ReservedMicroUSD != 0 {
		t.Errorf("usage %+v, want 500 spent (the settle during the seed's read)", u)
	}
}

// testSettleWithoutSeed: settles that find the new period's spend without a seed are counted by
// the seed exactly once, whether their ledger entries are written before the seed's read,
// during it, or after it (the store's float keeps them under their request ids, and the seed
// reads the ledger without those ids). r1 settles 200 with its entry not yet written (queued in
// a replica's writer); r2 settles 300 during the read and its entry is written before the
// ledger is summed. The spend is 500: not 300 (r1 lost, as when the settle was left to a seed
// that read the ledger before its entry), not 600 or 800 (r2, or both, counted twice).
func testSettleWithoutSeed(t *testing.T, b Backend) {
	ck := NewClock()
	led := NewLedger()
	ly := keyLayer(admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodDay})
	s := b.Open(t, ck.Now, led)
	h1 := acquire(t, s, admission.Request{Layers: ly, ReserveMicroUSD: 300, RequestID: "r1"})
	h2 := acquire(t, s, admission.Request{Layers: ly, ReserveMicroUSD: 300, RequestID: "r2"})
	ck.Advance(time.Hour) // a new day: its spend has no seed
	h1.Settle(0, 200)
	var once sync.Once
	led.DuringRead = func() {
		once.Do(func() {
			h2.Settle(0, 300)
			led.SettleID(ck.Now(), "r2", ly, "", 300) // its batch commits before the sum
		})
	}
	h3 := acquire(t, s, admission.Request{Layers: ly, ReserveMicroUSD: 500, RequestID: "r3"}) // 1000 - 500 fits exactly
	led.DuringRead = nil
	if u := usage(t, s, ly[0]); u.SpentMicroUSD != 500 || u.ReservedMicroUSD != 500 {
		t.Errorf("usage %+v, want 500 spent (200 + 300, each once) and 500 reserved", u)
	}
	led.SettleID(ck.Now(), "r1", ly, "", 200) // r1's entry is written at last
	h3.Settle(0, 100)
	led.SettleID(ck.Now(), "r3", ly, "", 100)
	if u := usage(t, s, ly[0]); u.SpentMicroUSD != 600 {
		t.Errorf("usage %+v, want 600 spent", u)
	}
}

// testSettleAfterFlush: a request admitted before the shared store lost its data settles after
// the loss, before any seed, its ledger entry still queued (in another replica's writer): the
// reseed counts it (the float), and once the entry is written a later reseed counts it once.
// The same for the prepaid balance.
func testSettleAfterFlush(t *testing.T, b Backend) {
	if b.Flush == nil {
		t.Skip("the store keeps no state outside its process")
	}
	ck := NewClock()
	led := NewLedger()
	led.Credit("acct", 10_000)
	ly := keyLayer(admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodTotal})
	s := b.Open(t, ck.Now, led)
	h := acquire(t, s, admission.Request{Layers: ly, CreditAccount: "acct", ReserveMicroUSD: 300, RequestID: "r1"})
	b.Flush(t)
	h.Settle(0, 200) // no seed: its entry is not in the ledger yet
	h2 := acquire(t, s, admission.Request{Layers: ly, CreditAccount: "acct", ReserveMicroUSD: 100, RequestID: "r2"})
	if u := usage(t, s, ly[0]); u.SpentMicroUSD != 200 {
		t.Errorf("spend after the flush %+v, want 200 (the settle after the loss, its entry still queued)", u)
	}
	if bl, _ := s.Balance(context.Background(), "acct"); bl.BalanceMicroUSD != 9800 {
		t.Errorf("balance after the flush %+v, want 9800", bl)
	}
	h2.Release()
	led.SettleID(ck.Now(), "r1", ly, "acct", 200)
	b.Flush(t)
	acquire(t, s, admission.Request{Layers: ly, CreditAccount: "acct", ReserveMicroUSD: 100, RequestID: "r3"}).Release()
	if u := usage(t, s, ly[0]); u.SpentMicroUSD != 200 {
		t.Errorf("spend after a second flush %+v, want 200", u)
	}
	if bl, _ := s.Balance(context.Background(), "acct"); bl.BalanceMicroUSD != 9800 {
		t.Errorf("balance after a second flush %+v, want 9800", bl)
	}
}
