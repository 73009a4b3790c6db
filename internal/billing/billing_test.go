package billing_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/admission/admissiontest"
	"github.com/switchyard-gw/switchyard/internal/billing"
)

// ledger records the entries appended; waitErr, when set, is what AppendWait returns (the
// entry is still recorded: it stays queued), and lag what Lag reports.
type ledger struct {
	mu      sync.Mutex
	es      []accounts.LedgerEntry
	waitErr error
	waits   int
	lag     time.Duration
}

func (l *ledger) AppendWait(ctx context.Context, e accounts.LedgerEntry) error {
	l.mu.Lock()
	l.waits++
	err := l.waitErr
	l.mu.Unlock()
	if errors.Is(err, accounts.ErrLedgerDropped) {
		return err
	}
	l.Append(e)
	return err
}

func (l *ledger) Lag() time.Duration { return l.lag }

func (l *ledger) Append(e accounts.LedgerEntry) bool {
	l.mu.Lock()
	l.es = append(l.es, e)
	l.mu.Unlock()
	return true
}

func (l *ledger) kinds() []accounts.Kind {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ks []accounts.Kind
	for _, e := range l.es {
		ks = append(ks, e.Kind)
	}
	return ks
}

// counting counts Acquire calls.
type counting struct {
	admission.Store
	n atomic.Int64
}

func (c *counting) Acquire(ctx context.Context, req admission.Request) (admission.Hold, error) {
	c.n.Add(1)
	return c.Store.Acquire(ctx, req)
}

var budgetLayer = admission.Layer{Scope: admission.ScopeKey, ID: "k",
	Limits: admission.Limits{Concurrency: 1, BudgetMicroUSD: 10_000, BudgetPeriod: admission.PeriodTotal}}

func newBiller(t *testing.T) (*billing.Biller, *admission.Memory, *ledger) {
	t.Helper()
	led := admissiontest.NewLedger()
	led.Credit("acct", 5000)
	m := admission.NewMemory(admissiontest.NewClock().Now, led)
	l := &ledger{}
	return &billing.Biller{Store: m, Ledger: l}, m, l
}

func metered() billing.Request {
	return billing.Request{AccountID: "acct", KeyID: "k", RequestID: "r1", Model: "m",
		Admission: admission.Request{Layers: []admission.Layer{budgetLayer}, CreditAccount: "acct", ReserveMicroUSD: 1000, Tokens: 10}}
}

// TestSettleOnce: a settle ends the reservation in the store and the ledger once; a Release or
// a second Settle after it does nothing.
func TestSettleOnce(t *testing.T) {
	b, m, l := newBiller(t)
	r, err := b.Reserve(context.Background(), metered())
	if err != nil {
		t.Fatal(err)
	}
	r.Settle(billing.Settlement{CostMicroUSD: 300, TotalTokens: 8, Model: "m", Deployment: "d"})
	r.Settle(billing.Settlement{CostMicroUSD: 999})
	r.Release()
	if !r.Ended() {
		t.Error("not ended")
	}
	if got := l.kinds(); !slices.Equal(got, []accounts.Kind{accounts.KindReserve, accounts.KindSettle}) {
		t.Errorf("ledger %v, want reserve then one settle", got)
	}
	u, _ := m.Usage(context.Background(), budgetLayer)
	bl, _ := m.Balance(context.Background(), "acct")
	if u.SpentMicroUSD != 300 || u.ReservedMicroUSD != 0 || u.InFlight != 0 || bl.BalanceMicroUSD != 4700 || bl.ReservedMicroUSD != 0 {
		t.Errorf("after one settle: usage %+v, balance %+v", u, bl)
	}
}

// TestReleaseOnce: a release bills nothing and writes one release; a Settle after it does
// nothing (a response that commits after the request was released is not billed twice or at
// all through this reservation).
func TestReleaseOnce(t *testing.T) {
	b, m, l := newBiller(t)
	r, err := b.Reserve(context.Background(), metered())
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	r.Settle(billing.Settlement{CostMicroUSD: 300})
	r.Release()
	if got := l.kinds(); !slices.Equal(got, []accounts.Kind{accounts.KindReserve, accounts.KindRelease}) {
		t.Errorf("ledger %v, want reserve then one release", got)
	}
	u, _ := m.Usage(context.Background(), budgetLayer)
	bl, _ := m.Balance(context.Background(), "acct")
	if u.SpentMicroUSD != 0 || u.InFlight != 0 || bl.BalanceMicroUSD != 5000 || bl.ReservedMicroUSD != 0 {
		t.Errorf("after a release: usage %+v, balance %+v", u, bl)
	}
}

// TestPanicReleases: the one deferred Release of the request path ends a reservation whose
// handler panicked: the slot comes back (the next request is admitted), nothing is billed.
func TestPanicReleases(t *testing.T) {
	b, m, l := newBiller(t)
	func() {
		defer func() { _ = recover() }()
		r, err := b.Reserve(context.Background(), metered())
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		panic("relay blew up")
	}()
	if got := l.kinds(); !slices.Equal(got, []accounts.Kind{accounts.KindReserve, accounts.KindRelease}) {
		t.Errorf("ledger %v, want reserve then release", got)
	}
	if u, _ := m.Usage(context.Background(), budgetLayer); u.InFlight != 0 || u.ReservedMicroUSD != 0 {
		t.Errorf("after the panic: %+v", u)
	}
	r, err := b.Reserve(context.Background(), metered())
	if err != nil {
		t.Fatalf("the slot did not come back: %v", err)
	}
	r.Release()
}

// TestUnmeteredSkipsStore: a request without layers or a prepaid account never calls the
// admission store and holds no money: its ledger gets a reserve of 0 (the trace of its
// dispatch, for the crash reconciliation) and its settle.
func TestUnmeteredSkipsStore(t *testing.T) {
	c := &counting{Store: admission.NewMemory(nil, nil)}
	l := &ledger{}
	b := &billing.Biller{Store: c, Ledger: l}
	r, err := b.Reserve(context.Background(), billing.Request{AccountID: "acct", RequestID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	r.Settle(billing.Settlement{CostMicroUSD: 5})
	if c.n.Load() != 0 {
		t.Errorf("the store was called %d times", c.n.Load())
	}
	if got := l.kinds(); !slices.Equal(got, []accounts.Kind{accounts.KindReserve, accounts.KindSettle}) || l.es[0].AmountMicroUSD != 0 {
		t.Errorf("ledger %v (%+v), want a reserve of 0 then one settle", got, l.es)
	}
	// An anonymous caller writes nothing at all.
	r, _ = b.Reserve(context.Background(), billing.Request{})
	r.Settle(billing.Settlement{CostMicroUSD: 5})
	if len(l.kinds()) != 2 {
		t.Errorf("an anonymous request wrote the ledger")
	}
}

// TestRefusalTakesNothing: a refused reservation writes no ledger entry and holds nothing.
func TestRefusalTakesNothing(t *testing.T) {
	b, m, l := newBiller(t)
	req := metered()
	req.Admission.ReserveMicroUSD = 6000 // above the balance of 5000
	if _, err := b.Reserve(context.Background(), req); err == nil {
		t.Fatal("admitted above the balance")
	}
	if len(l.kinds()) != 0 {
		t.Errorf("a refusal wrote %v", l.kinds())
	}
	if u, _ := m.Usage(context.Background(), budgetLayer); u.InFlight != 0 || u.Requests != 0 {
		t.Errorf("a refusal took %+v", u)
	}
}

// TestReserveDurableBeforeDispatch: the reserve entry is waited for (AppendWait). When it cannot
// be stored in time, a request holding money is refused with ErrLedgerUnavailable, gives back
// what it acquired, and its queued reserve is released; one holding none goes on; a shed entry
// (a full queue) has no release; while the writer lags past LagWarning an unmetered request
// does not wait at all.
func TestReserveDurableBeforeDispatch(t *testing.T) {
	b, m, l := newBiller(t)
	l.waitErr = context.DeadlineExceeded
	if _, err := b.Reserve(context.Background(), metered()); err != billing.ErrLedgerUnavailable {
		t.Fatalf("metered with the ledger store down: %v, want ErrLedgerUnavailable", err)
	}
	if got := l.kinds(); !slices.Equal(got, []accounts.Kind{accounts.KindReserve, accounts.KindRelease}) {
		t.Errorf("ledger %v, want the queued reserve then its release", got)
	}
	if u, _ := m.Usage(context.Background(), budgetLayer); u.InFlight != 0 || u.ReservedMicroUSD != 0 {
		t.Errorf("a refused request still holds %+v", u)
	}
	r, err := b.Reserve(context.Background(), billing.Request{AccountID: "acct", RequestID: "u1"})
	if err != nil {
		t.Fatalf("unmetered with the ledger store down: %v, want dispatched", err)
	}
	r.Release()

	l2 := &ledger{waitErr: accounts.ErrLedgerDropped}
	b2 := &billing.Biller{Store: m, Ledger: l2}
	if _, err := b2.Reserve(context.Background(), metered()); err != billing.ErrLedgerUnavailable {
		t.Fatalf("metered with a full queue: %v", err)
	}
	if len(l2.kinds()) != 0 {
		t.Errorf("a shed reserve got %v", l2.kinds())
	}

	l3 := &ledger{lag: time.Minute}
	b3 := &billing.Biller{Store: m, Ledger: l3}
	r, err = b3.Reserve(context.Background(), billing.Request{AccountID: "acct", RequestID: "u2"})
	if err != nil || l3.waits != 0 || !slices.Equal(l3.kinds(), []accounts.Kind{accounts.KindReserve}) {
		t.Errorf("unmetered while the writer lags: %v, %d waits, %v; want queued without waiting", err, l3.waits, l3.kinds())
	}
	r.Release()
	if r, err = b3.Reserve(context.Background(), metered()); err != nil || l3.waits != 1 {
		t.Errorf("metered while the writer lags: %v, %d waits; want waited for", err, l3.waits)
	} else {
		r.Release()
	}
}
