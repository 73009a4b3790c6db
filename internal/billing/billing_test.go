package billing_test

import (
	"context"
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

// ledger records the entries appended (an End is recorded as appended); secureErr, when set,
// is what Secure returns; shed sheds every reserve.
type ledger struct {
	mu        sync.Mutex
	es        []accounts.LedgerEntry
	secureErr error
	secures   []bool // the optional flag of each Secure
	shed      bool
}

func (l *ledger) Reserve(e accounts.LedgerEntry) (accounts.Ticket, bool) {
	if l.shed {
		return accounts.Ticket{}, false
	}
	return accounts.Ticket{}, l.Append(e)
}

func (l *ledger) Secure(ctx context.Context, _ accounts.Ticket, e *accounts.LedgerEntry, optional bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.secures = append(l.secures, optional)
	return l.secureErr
}

func (l *ledger) End(_ accounts.Ticket, e accounts.LedgerEntry) bool { return l.Append(e) }

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

// TestReserveSecuredAtCommit (issue 24 item 1): Reserve queues the reserve entry and waits
// for nothing; Secure (the commit gate) secures it once, optional for a request that holds no
// money. When it cannot be secured in time, a request holding money is refused with
// ErrLedgerUnavailable (the relay answers it before any byte), while one holding none goes on;
// a shed reserve refuses a request holding money before dispatch, gives back what it acquired
// and writes no release, while one holding none goes on without a trace and no gate.
func TestReserveSecuredAtCommit(t *testing.T) {
	b, m, l := newBiller(t)
	r, err := b.Reserve(context.Background(), metered())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.secures) != 0 || !slices.Equal(l.kinds(), []accounts.Kind{accounts.KindReserve}) || !r.Queued() {
		t.Fatalf("after Reserve: %d secures, ledger %v; want the reserve queued and nothing waited for", len(l.secures), l.kinds())
	}
	if err := r.Secure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Secure(context.Background()); err != nil || !slices.Equal(l.secures, []bool{false}) {
		t.Errorf("Secure twice: %v, secures %v; want one, not optional", err, l.secures)
	}
	r.Release()

	l.secureErr = context.DeadlineExceeded
	r, err = b.Reserve(context.Background(), metered())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Secure(context.Background()); err != billing.ErrLedgerUnavailable {
		t.Fatalf("metered with the ledger store down: %v, want ErrLedgerUnavailable", err)
	}
	r.Release()
	if u, _ := m.Usage(context.Background(), budgetLayer); u.InFlight != 0 || u.ReservedMicroUSD != 0 {
		t.Errorf("a refused request still holds %+v", u)
	}
	r, err = b.Reserve(context.Background(), billing.Request{AccountID: "acct", RequestID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Secure(context.Background()); err != nil || l.secures[len(l.secures)-1] != true {
		t.Fatalf("unmetered with the ledger store down: %v (optional %v), want committed", err, l.secures)
	}
	r.Release()

	l2 := &ledger{shed: true}
	b2 := &billing.Biller{Store: m, Ledger: l2}
	if _, err := b2.Reserve(context.Background(), metered()); err != billing.ErrLedgerUnavailable {
		t.Fatalf("metered with a full queue: %v", err)
	}
	if u, _ := m.Usage(context.Background(), budgetLayer); u.InFlight != 0 || u.ReservedMicroUSD != 0 {
		t.Errorf("a shed request still holds %+v", u)
	}
	r, err = b2.Reserve(context.Background(), billing.Request{AccountID: "acct", RequestID: "u2"})
	if err != nil || r.Queued() {
		t.Fatalf("unmetered with a full queue: %v, queued %v; want dispatched without a trace", err, r.Queued())
	}
	r.Release()
	if len(l2.kinds()) != 0 || len(l2.secures) != 0 {
		t.Errorf("a shed reserve got %v, secures %v", l2.kinds(), l2.secures)
	}
}

// slowHold is a hold whose Settle signals started, then waits for proceed (a settle's call to
// the admission store under way).
type slowHold struct {
	admission.Hold
	started, proceed chan struct{}
}

func (h *slowHold) Settle(tokens, cost int64) {
	close(h.started)
	<-h.proceed
	h.Hold.Settle(tokens, cost)
}

type slowStore struct {
	admission.Store
	hold *slowHold
	rid  string // the last Acquire's request id
}

func (s *slowStore) Acquire(ctx context.Context, req admission.Request) (admission.Hold, error) {
	s.rid = req.RequestID
	h, err := s.Store.Acquire(ctx, req)
	if err != nil {
		return nil, err
	}
	s.hold.Hold = h
	return s.hold, nil
}

// TestSettlingBarrier: Biller.Settling is held by a settle from its admission store call until
// its ledger entry is queued, so that taking it for writing (the Redis store's ledger flush
// after Redis lost its data) waits for the settles the store counted and the ledger has not
// received yet: the flush that follows then writes them. The store's request id is the
// ledger's (a seed's float names it).
func TestSettlingBarrier(t *testing.T) {
	b, m, l := newBiller(t)
	sh := &slowHold{started: make(chan struct{}), proceed: make(chan struct{})}
	ss := &slowStore{Store: m, hold: sh}
	b.Store = ss
	b.Settling = new(sync.RWMutex)
	r, err := b.Reserve(context.Background(), metered())
	if err != nil {
		t.Fatal(err)
	}
	if ss.rid != "r1" {
		t.Errorf("the admission store got request id %q, want the ledger's r1", ss.rid)
	}
	settled := make(chan struct{})
	go func() { defer close(settled); r.Settle(billing.Settlement{CostMicroUSD: 300}) }()
	<-sh.started
	locked := make(chan int)
	go func() {
		b.Settling.Lock()
		n := 0
		for _, k := range l.kinds() {
			if k == accounts.KindSettle {
				n++
			}
		}
		b.Settling.Unlock()
		locked <- n
	}()
	select {
	case n := <-locked:
		t.Fatalf("the barrier was taken while a settle was under way (%d settle entries queued)", n)
	case <-time.After(100 * time.Millisecond): // gives a broken barrier the time to be taken
	}
	close(sh.proceed)
	if n := <-locked; n != 1 {
		t.Errorf("the barrier was taken with %d settle entries queued, want 1", n)
	}
	<-settled
}
