package admission_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/admission/admissiontest"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// flushedLedger is a store of accounts that holds only what the ledger writer has flushed to
// it (AppendLedger): the seeder's view of the ledger, the real accounts.Writer in front.
type flushedLedger struct {
	accounts.Store // nil: only the methods below are called
	mu             sync.Mutex
	entries        []accounts.LedgerEntry
	balance        map[string]int64
	workspace      map[string]string // key id -> workspace id
}

func (f *flushedLedger) AppendLedger(_ context.Context, es []accounts.LedgerEntry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range es {
		f.entries = append(f.entries, e)
		if e.Kind == accounts.KindSettle {
			f.balance[e.AccountID] -= e.AmountMicroUSD
		}
	}
	return nil
}

func (f *flushedLedger) SettledMicroUSD(_ context.Context, flt accounts.SettleFilter) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s int64
	for _, e := range f.entries {
		if e.Kind != accounts.KindSettle || e.At.Before(flt.From) {
			continue
		}
		if (flt.KeyID != "" && e.KeyID == flt.KeyID) || (flt.AccountID != "" && e.AccountID == flt.AccountID) ||
			(flt.WorkspaceID != "" && f.workspace[e.KeyID] == flt.WorkspaceID) {
			s += e.AmountMicroUSD
		}
	}
	return s, nil
}

func (f *flushedLedger) Account(_ context.Context, id string) (*accounts.Account, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.balance[id]
	if !ok {
		return nil, accounts.ErrNotFound
	}
	return &accounts.Account{ID: id, BalanceMicroUSD: b}, nil
}

// TestSeedAcrossPeriodBoundary is issue 24's period-boundary repro at the seam of the admission
// store, the seeder and the ledger writer (issue 25 item 6), on both admission stores: a
// request reserves 900 of a key's daily budget of 1000 (and of its workspace's daily and its
// account's monthly budget) just before midnight on a month's last day, and settles 900 just
// after. The new day's and month's spend counters have no seed yet, so the settle is left to
// the seed; the ledger writer has not flushed it. The next request's seed must count the
// queued settle (today's seeder reads only the store: it seeds 0, and 200 more is admitted
// against a budget already spent at 900), and once the writer flushes, a reseed counts it
// once, not twice.
func TestSeedAcrossPeriodBoundary(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T, now func() time.Time, s admission.Seeder) (admission.Store, func())
	}{
		{"memory", func(t *testing.T, now func() time.Time, s admission.Seeder) (admission.Store, func()) {
			return admission.NewMemory(now, s), nil // a restart is a new store
		}},
		{"redis", func(t *testing.T, now func() time.Time, s admission.Seeder) (admission.Store, func()) {
			url := os.Getenv("SWITCHYARD_TEST_REDIS_URL")
			if url == "" {
				t.Skip("SWITCHYARD_TEST_REDIS_URL is not set")
			}
			p := prefixOf(t, url)
			return openRedis(t, url, p, admission.RedisOptions{Now: now, Seeder: s, LeaseTTL: 1000 * time.Hour}),
				func() { flushPrefix(t, url, p) }
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ck := admissiontest.NewClock() // 23:59:15 on 30 November
			fl := &flushedLedger{balance: map[string]int64{"acct": 5000}, workspace: map[string]string{"k": "w"}}
			w := accounts.NewWriter(fl, accounts.WriterOptions{})
			seeder := accounts.Seeder{Store: fl, Writer: w, Workspace: func(k string) string { return fl.workspace[k] }}
			s, flush := b.open(t, ck.Now, seeder)
			ctx := context.Background()
			ly := []admission.Layer{
				{Scope: admission.ScopeKey, ID: "k", Limits: admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodDay}},
				{Scope: admission.ScopeWorkspace, ID: "w", Limits: admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodDay}},
				{Scope: admission.ScopeAccount, ID: "acct", Limits: admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodMonth}},
			}
			req := func(reserve int64) admission.Request {
				return admission.Request{Layers: ly, CreditAccount: "acct", ReserveMicroUSD: reserve}
			}
			h, err := s.Acquire(ctx, req(900))
			if err != nil {
				t.Fatal(err)
			}
			ck.Advance(time.Minute) // 00:00:15 on 1 December: a new day and a new month
			// What billing.Reservation.Settle does: the admission store first, then the ledger.
			h.Settle(0, 900)
			w.Append(accounts.LedgerEntry{At: ck.Now(), AccountID: "acct", KeyID: "k", RequestID: "r1", Kind: accounts.KindSettle, AmountMicroUSD: 900})

			check := func(when string) {
				t.Helper()
				for _, l := range ly { // each layer on its own, so that each is seeded and checked
					_, err := s.Acquire(ctx, admission.Request{Layers: []admission.Layer{l}, CreditAccount: "acct", ReserveMicroUSD: 200})
					if fe := failure.From(err); fe == nil || fe.LimitKind != admission.KindBudget {
						t.Fatalf("%s: 200 more on the %s after 900 spent of 1000: err = %v, want the budget refusal", when, l.Scope, err)
					}
					if u, err := s.Usage(ctx, l); err != nil || u.SpentMicroUSD != 900 {
						t.Errorf("%s: %s %s spent %d (%v), want 900", when, l.Scope, l.ID, u.SpentMicroUSD, err)
					}
				}
				if bl, _ := s.Balance(ctx, "acct"); bl.BalanceMicroUSD != 4100 {
					t.Errorf("%s: balance %+v, want 4100", when, bl)
				}
			}
			check("before the writer flushed")

			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error)
			go func() { done <- w.Run(rctx) }()
			if err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// The counters are lost (a restart of the memory store, a flush of Redis) and reseeded
			// from what the writer flushed: counted once.
			if flush != nil {
				flush()
			} else {
				s, _ = b.open(t, ck.Now, seeder)
			}
			check("reseeded after the flush")
		})
	}
}
