package admission

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// clock is an injected clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newClock starts 15 s into a minute of a month's last day.
func newClock() *clock { return &clock{t: time.Date(2026, 11, 30, 23, 59, 15, 0, time.UTC)} }

func keyLayer(l Limits) []Layer { return []Layer{{Scope: ScopeKey, ID: "k", Limits: l}} }

// refusal asserts err is a *failure.Error of class and kind, and returns it.
func refusal(t *testing.T, err error, class failure.Class, kind string) *failure.Error {
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

// TestLimits: R-BILL-1, each limit admits up to its value and refuses the next request with
// its class, limit kind and retry-after, taking nothing on a refusal.
func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limits    Limits
		req       Request // Layers filled in
		admitted  int     // requests admitted (holds kept) before the refusal
		class     failure.Class
		kind      string
		retry     time.Duration // 0: none expected
		sameUsage bool
	}{
		{name: "rpm", limits: Limits{RPM: 3}, admitted: 3, class: failure.RateLimited, kind: KindRPM, retry: 45 * time.Second},
		{name: "tpm", limits: Limits{TPM: 1000}, req: Request{Tokens: 300}, admitted: 3, class: failure.RateLimited, kind: KindTPM, retry: 45 * time.Second},
		{name: "concurrency", limits: Limits{Concurrency: 2}, admitted: 2, class: failure.RateLimited, kind: KindConcurrency, retry: time.Second},
		{name: "budget", limits: Limits{BudgetMicroUSD: 1000}, req: Request{ReserveMicroUSD: 400}, admitted: 2, class: failure.InsufficientCredit, kind: KindBudget},
		{name: "budget exact fit", limits: Limits{BudgetMicroUSD: 1200}, req: Request{ReserveMicroUSD: 400}, admitted: 3, class: failure.InsufficientCredit, kind: KindBudget},
		{name: "reserve above whole budget", limits: Limits{BudgetMicroUSD: 100, BudgetPeriod: PeriodTotal}, req: Request{ReserveMicroUSD: 101}, admitted: 0, class: failure.InsufficientCredit, kind: KindBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := newClock()
			m := NewMemory(ck.Now)
			ctx := context.Background()
			req := tc.req
			req.Layers = keyLayer(tc.limits)
			for i := range tc.admitted {
				if _, err := m.Acquire(ctx, req); err != nil {
					t.Fatalf("request %d refused: %v", i+1, err)
				}
			}
			before, _ := m.Usage(ctx, ScopeKey, "k")
			_, err := m.Acquire(ctx, req)
			fe := refusal(t, err, tc.class, tc.kind)
			if fe.Class.Status() != map[failure.Class]int{failure.RateLimited: 429, failure.InsufficientCredit: 402}[tc.class] {
				t.Errorf("status %d", fe.Class.Status())
			}
			if fe.RetryAfter != tc.retry {
				t.Errorf("RetryAfter = %v, want %v", fe.RetryAfter, tc.retry)
			}
			if after, _ := m.Usage(ctx, ScopeKey, "k"); after != before {
				t.Errorf("a refusal took something: usage %+v -> %+v", before, after)
			}
		})
	}
}

// TestZeroLimitsAdmitEverything: zero is no limit, and a layer with zero limits keeps no counters.
func TestZeroLimitsAdmitEverything(t *testing.T) {
	m := NewMemory(newClock().Now)
	for range 1000 {
		if _, err := m.Acquire(context.Background(), Request{Layers: keyLayer(Limits{}), Tokens: 1e9, ReserveMicroUSD: 1e12}); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.layers) != 0 {
		t.Errorf("counters kept for an unlimited layer")
	}
}

// TestLayersAllOrNothing: the key and its account are both enforced, and a refusal by one
// layer takes nothing from the other (the atomic check-and-take of R-BILL-1 and R-BILL-4).
func TestLayersAllOrNothing(t *testing.T) {
	m := NewMemory(newClock().Now)
	ctx := context.Background()
	acct := Layer{Scope: ScopeAccount, ID: "acme", Limits: Limits{RPM: 2}}
	a := []Layer{{Scope: ScopeKey, ID: "a", Limits: Limits{RPM: 10}}, acct}
	b := []Layer{{Scope: ScopeKey, ID: "b", Limits: Limits{RPM: 10}}, acct}
	for _, ls := range [][]Layer{a, b} {
		if _, err := m.Acquire(ctx, Request{Layers: ls}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.Acquire(ctx, Request{Layers: a})
	if fe := refusal(t, err, failure.RateLimited, KindRPM); fe.Msg != "rate limit reached: this account allows 2 requests per minute" {
		t.Errorf("message %q", fe.Msg)
	}
	if u, _ := m.Usage(ctx, ScopeKey, "a"); u.Requests != 1 {
		t.Errorf("key a counted %d requests, want 1: the refused one was taken", u.Requests)
	}
	// The key's own limit refuses first when it is the tighter one.
	tight := []Layer{{Scope: ScopeKey, ID: "c", Limits: Limits{Concurrency: 1}}, {Scope: ScopeAccount, ID: "other", Limits: Limits{Concurrency: 5}}}
	if _, err := m.Acquire(ctx, Request{Layers: tight}); err != nil {
		t.Fatal(err)
	}
	_, err = m.Acquire(ctx, Request{Layers: tight})
	if fe := refusal(t, err, failure.RateLimited, KindConcurrency); fe.Msg != "rate limit reached: this key allows 1 requests in flight" {
		t.Errorf("message %q", fe.Msg)
	}
	if u, _ := m.Usage(ctx, ScopeAccount, "other"); u.InFlight != 1 {
		t.Errorf("account in flight = %d, want 1", u.InFlight)
	}
}

// TestWorkspaceScope: a workspace's limits are counted under ScopeWorkspace, apart from an
// account or key of the same id, and its refusals name the workspace, not the account.
func TestWorkspaceScope(t *testing.T) {
	for s, want := range map[Scope]string{ScopeKey: "key", ScopeAccount: "account", ScopeWorkspace: "workspace", 0: "layer"} {
		if got := s.String(); got != want {
			t.Errorf("Scope(%d).String() = %q, want %q", s, got, want)
		}
	}
	m := NewMemory(newClock().Now)
	ctx := context.Background()
	ws := Layer{Scope: ScopeWorkspace, ID: "x", Limits: Limits{RPM: 1, BudgetMicroUSD: 10, BudgetPeriod: PeriodTotal}}
	acct := Layer{Scope: ScopeAccount, ID: "x", Limits: Limits{RPM: 5}}
	if _, err := m.Acquire(ctx, Request{Layers: []Layer{ws, acct}}); err != nil {
		t.Fatal(err)
	}
	if w, a := usage(m.Usage(ctx, ScopeWorkspace, "x")), usage(m.Usage(ctx, ScopeAccount, "x")); w.Requests != 1 || a.Requests != 1 {
		t.Fatalf("workspace counted %d, account %d requests; want 1 and 1 (separate counters)", w.Requests, a.Requests)
	}
	for _, tc := range []struct {
		name  string
		layer Layer
		req   Request
		class failure.Class
		kind  string
		msg   string
	}{
		{"rpm", ws, Request{}, failure.RateLimited, KindRPM, "rate limit reached: this workspace allows 1 requests per minute"},
		{"budget", Layer{Scope: ScopeWorkspace, ID: "y", Limits: Limits{BudgetMicroUSD: 10, BudgetPeriod: PeriodTotal}},
			Request{ReserveMicroUSD: 11}, failure.InsufficientCredit, KindBudget,
			"insufficient budget: this workspace's budget of $0.000010 in total has $0.000010 left, and this request may cost up to $0.000011"},
	} {
		tc.req.Layers = []Layer{tc.layer}
		_, err := m.Acquire(ctx, tc.req)
		if fe := refusal(t, err, tc.class, tc.kind); fe.Msg != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.name, fe.Msg, tc.msg)
		}
	}
}

// usage drops the error of Memory.Usage, which is always nil.
func usage(u Usage, _ error) Usage { return u }

// TestWindows: rpm and tpm count in fixed one-minute windows of the injected clock; the
// retry-after is the time to the window's end, clamped to 1..60 s.
func TestWindows(t *testing.T) {
	ck := newClock() // 23:59:15
	m := NewMemory(ck.Now)
	ctx := context.Background()
	req := Request{Layers: keyLayer(Limits{RPM: 1, TPM: 100}), Tokens: 10}
	if _, err := m.Acquire(ctx, req); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		advance time.Duration
		retry   time.Duration
	}{
		{0, 45 * time.Second},
		{44 * time.Second, time.Second},       // 23:59:59
		{500 * time.Millisecond, time.Second}, // half a second left: clamped up to 1 s
	} {
		ck.Advance(tc.advance)
		_, err := m.Acquire(ctx, req)
		if fe := refusal(t, err, failure.RateLimited, KindRPM); fe.RetryAfter != tc.retry {
			t.Errorf("retry-after %v, want %v", fe.RetryAfter, tc.retry)
		}
	}
	ck.Advance(500 * time.Millisecond) // 00:00:00: a new window
	if _, err := m.Acquire(ctx, req); err != nil {
		t.Fatalf("new window refused: %v", err)
	}

	// tpm: a charge larger than the whole limit fits an empty window only.
	big := Request{Layers: []Layer{{Scope: ScopeKey, ID: "big", Limits: Limits{TPM: 100}}}, Tokens: 500}
	if _, err := m.Acquire(ctx, big); err != nil {
		t.Fatalf("a large request into an empty window: %v", err)
	}
	_, err := m.Acquire(ctx, big)
	refusal(t, err, failure.RateLimited, KindTPM)
	ck.Advance(time.Minute)
	if _, err := m.Acquire(ctx, big); err != nil {
		t.Fatalf("next window: %v", err)
	}
}

// TestSettleCorrectsTokens: the tpm charge (estimate + max output) is replaced by the actual
// usage at settle; a release without settle returns it (R-BILL-2).
func TestSettleCorrectsTokens(t *testing.T) {
	ck := newClock()
	m := NewMemory(ck.Now)
	ctx := context.Background()
	req := Request{Layers: keyLayer(Limits{TPM: 1000}), Tokens: 600}
	h, err := m.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctx, req); err == nil {
		t.Fatal("600 + 600 > 1000 admitted")
	}
	h.Settle(150, 0)
	h.Release()
	if u, _ := m.Usage(ctx, ScopeKey, "k"); u.Tokens != 150 {
		t.Errorf("tokens after settle = %d, want 150", u.Tokens)
	}
	h2, err := m.Acquire(ctx, req)
	if err != nil {
		t.Fatalf("150 + 600 <= 1000 refused: %v", err)
	}
	h2.Release()
	if u, _ := m.Usage(ctx, ScopeKey, "k"); u.Tokens != 150 || u.Requests != 2 {
		t.Errorf("after a release: %+v, want 150 tokens and 2 requests", u)
	}
	// Settled in a later window: only what the estimate missed is charged there.
	h3, _ := m.Acquire(ctx, Request{Layers: keyLayer(Limits{TPM: 1000}), Tokens: 100})
	ck.Advance(time.Minute)
	h3.Settle(130, 0)
	if u, _ := m.Usage(ctx, ScopeKey, "k"); u.Tokens != 30 {
		t.Errorf("later window tokens = %d, want 30", u.Tokens)
	}
}

// TestBudgetSettleAndRelease: a settle replaces the reserve by the actual cost; a release
// without settle bills nothing (R-BILL-2); both are idempotent; Settle after Release is void.
func TestBudgetSettleAndRelease(t *testing.T) {
	m := NewMemory(newClock().Now)
	ctx := context.Background()
	req := Request{Layers: keyLayer(Limits{BudgetMicroUSD: 10_000, Concurrency: 5}), ReserveMicroUSD: 3000}
	h1, _ := m.Acquire(ctx, req)
	h2, _ := m.Acquire(ctx, req)
	if u, _ := m.Usage(ctx, ScopeKey, "k"); u != (Usage{Requests: 2, InFlight: 2, ReservedMicroUSD: 6000}) {
		t.Errorf("after two acquires: %+v", u)
	}
	h1.Settle(0, 1234)
	h1.Settle(0, 9999) // ignored
	h1.Release()
	h1.Release() // ignored
	h2.Release()
	h2.Settle(0, 5000) // ignored: released unbilled
	want := Usage{Requests: 2, SpentMicroUSD: 1234}
	if u, _ := m.Usage(ctx, ScopeKey, "k"); u != want {
		t.Errorf("usage = %+v, want %+v", u, want)
	}
}

// TestBudgetPeriods: day and month budgets reset at the UTC period start, total never; a
// reserve outstanding across the reset stays reserved and its settle charges the new period.
func TestBudgetPeriods(t *testing.T) {
	for _, tc := range []struct {
		period  Period
		advance time.Duration
		reset   bool
	}{
		{PeriodDay, 44 * time.Second, false},
		{PeriodDay, 46 * time.Second, true},   // 00:00:01 the next day
		{PeriodMonth, 46 * time.Second, true}, // Nov 30 -> Dec 1
		{PeriodMonth, 2 * time.Hour, true},
		{PeriodTotal, 400 * 24 * time.Hour, false},
	} {
		t.Run(tc.period.String(), func(t *testing.T) {
			ck := newClock()
			m := NewMemory(ck.Now)
			ctx := context.Background()
			req := Request{Layers: keyLayer(Limits{BudgetMicroUSD: 1000, BudgetPeriod: tc.period}), ReserveMicroUSD: 600}
			h, _ := m.Acquire(ctx, req)
			h.Settle(0, 600)
			h.Release()
			open, err := m.Acquire(ctx, Request{Layers: req.Layers, ReserveMicroUSD: 100})
			if err != nil {
				t.Fatal(err)
			}
			ck.Advance(tc.advance)
			_, err = m.Acquire(ctx, req)
			if tc.reset != (err == nil) {
				t.Fatalf("after %v: err = %v, want reset %v", tc.advance, err, tc.reset)
			}
			u, _ := m.Usage(ctx, ScopeKey, "k")
			wantReserved := int64(100)
			if tc.reset {
				wantReserved = 700
			}
			if u.ReservedMicroUSD != wantReserved {
				t.Errorf("reserved = %d, want %d (the open reserve carries over)", u.ReservedMicroUSD, wantReserved)
			}
			open.Settle(0, 50)
			u, _ = m.Usage(ctx, ScopeKey, "k")
			wantSpent := int64(650)
			if tc.reset {
				wantSpent = 50
			}
			if u.SpentMicroUSD != wantSpent {
				t.Errorf("spent = %d, want %d", u.SpentMicroUSD, wantSpent)
			}
		})
	}
}

// TestConcurrentBudget: R-BILL-1 under a burst. Hundreds of goroutines acquire against a small
// budget and settle at random costs up to their reserve, or release: the budget is never
// exceeded at any moment, and at the end spent equals the sum of the settled costs exactly.
func TestConcurrentBudget(t *testing.T) {
	m := NewMemory(newClock().Now)
	ctx := context.Background()
	const (
		budget  = 50_000
		reserve = 3_000
		workers = 400
	)
	layers := []Layer{
		{Scope: ScopeKey, ID: "k", Limits: Limits{BudgetMicroUSD: budget, BudgetPeriod: PeriodTotal}},
		{Scope: ScopeAccount, ID: "a", Limits: Limits{BudgetMicroUSD: budget * 10, Concurrency: workers}},
	}
	var settled, admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for range 20 {
				h, err := m.Acquire(ctx, Request{Layers: layers, ReserveMicroUSD: reserve})
				if err != nil {
					refusal(t, err, failure.InsufficientCredit, KindBudget)
					refused.Add(1)
					continue
				}
				admitted.Add(1)
				if u, _ := m.Usage(ctx, ScopeKey, "k"); u.SpentMicroUSD+u.ReservedMicroUSD > budget {
					t.Errorf("overspend: %+v over a budget of %d", u, budget)
				}
				if rng.IntN(4) == 0 {
					h.Release() // a failed request: nothing billed
					continue
				}
				cost := rng.Int64N(reserve + 1)
				h.Settle(0, cost)
				settled.Add(cost)
				h.Release()
			}
		})
	}
	wg.Wait()
	u, _ := m.Usage(ctx, ScopeKey, "k")
	if u.SpentMicroUSD != settled.Load() || u.ReservedMicroUSD != 0 || u.SpentMicroUSD > budget {
		t.Errorf("key usage %+v; settled %d; budget %d", u, settled.Load(), budget)
	}
	if a, _ := m.Usage(ctx, ScopeAccount, "a"); a.SpentMicroUSD != settled.Load() || a.InFlight != 0 || a.ReservedMicroUSD != 0 {
		t.Errorf("account usage %+v; settled %d", a, settled.Load())
	}
	if refused.Load() == 0 || admitted.Load() == 0 {
		t.Errorf("admitted %d, refused %d: the test did not reach the budget", admitted.Load(), refused.Load())
	}
}

// TestReserveFormula: contract.md "Billing": input estimate x input price + (max_tokens, else
// the model's max_output_tokens, else 4096) x output price, in whole micro-USD rounded up.
func TestReserveFormula(t *testing.T) {
	for _, tc := range []struct {
		in, maxTokens, modelMax int64
		pin, pout               float64
		want                    int64
	}{
		{1000, 100, 64000, 3, 15, 1000*3 + 100*15},
		{1000, 0, 64000, 3, 15, 1000*3 + 64000*15},
		{1000, 0, 0, 3, 15, 1000*3 + 4096*15},
		{1000, 0, 0, 0.15, 0.6, 150 + 2458}, // 4096 x 0.6 = 2457.6 -> 2458
		{0, 0, 0, 0, 0, 0},
		{10, 10, 0, -1, 1e300, 1<<63 - 1},
	} {
		got := CostMicroUSD(tc.in, OutputTokens(tc.maxTokens, tc.modelMax), tc.pin, tc.pout)
		if got != tc.want {
			t.Errorf("CostMicroUSD(%d in, max %d/%d, %v/%v) = %d, want %d", tc.in, tc.maxTokens, tc.modelMax, tc.pin, tc.pout, got, tc.want)
		}
	}
	if MicroUSD(0.0012345) != 1235 || MicroUSD(-1) != 0 {
		t.Errorf("MicroUSD: %d %d", MicroUSD(0.0012345), MicroUSD(-1))
	}
}

func TestParsePeriod(t *testing.T) {
	for s, want := range map[string]Period{"": PeriodMonth, "month": PeriodMonth, "day": PeriodDay, "total": PeriodTotal} {
		if p, err := ParsePeriod(s); err != nil || p != want {
			t.Errorf("ParsePeriod(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParsePeriod("week"); err == nil {
		t.Error("week accepted")
	}
}

// TestCancelledContext: a done context is refused as cancelled, taking nothing.
func TestCancelledContext(t *testing.T) {
	m := NewMemory(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Acquire(ctx, Request{Layers: keyLayer(Limits{RPM: 1})})
	if fe := failure.From(err); fe == nil || fe.Class != failure.Cancelled {
		t.Fatalf("err = %v", err)
	}
}

func BenchmarkAcquireSettle(b *testing.B) {
	m := NewMemory(nil)
	ctx := context.Background()
	req := Request{Layers: []Layer{
		{Scope: ScopeKey, ID: "k", Limits: Limits{RPM: 1 << 40, TPM: 1 << 50, Concurrency: 1 << 20, BudgetMicroUSD: 1 << 60}},
		{Scope: ScopeAccount, ID: "a", Limits: Limits{Concurrency: 1 << 20}},
	}, Tokens: 1000, ReserveMicroUSD: 5000}
	b.ReportAllocs()
	for b.Loop() {
		h, err := m.Acquire(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		h.Settle(900, 4000)
		h.Release()
	}
}
