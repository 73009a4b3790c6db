package admission_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
)

// balanceSeeder seeds every prepaid balance with the same amount and no spend.
type balanceSeeder int64

func (balanceSeeder) SpentMicroUSD(context.Context, admission.Scope, string, time.Time, []string) (int64, error) {
	return 0, nil
}

func (b balanceSeeder) BalanceMicroUSD(context.Context, string, []string) (int64, error) {
	return int64(b), nil
}

// TestSyncBalanceKeepsSettlesAfterTheMark: a reload reads the stored balance (minus the queued
// settles) after it took the account's mark; a settle charged between that read and the sync
// is in neither, and SyncBalance must still count it. Without the mark the sync overwrote the
// balance with the stale read, and the settled money could be spent again (TestBillingBurst saw
// a prepaid account charged 8,196 against a 7,000 credit).
func TestSyncBalanceKeepsSettlesAfterTheMark(t *testing.T) {
	ctx := context.Background()
	m := admission.NewMemory(nil, balanceSeeder(1000))
	charge := func(cost int64) {
		t.Helper()
		h, err := m.Acquire(ctx, admission.Request{CreditAccount: "acct", ReserveMicroUSD: 100, RequestID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		h.Settle(0, cost)
	}
	balance := func() int64 {
		b, err := m.Balance(ctx, "acct")
		if err != nil {
			t.Fatal(err)
		}
		return b.BalanceMicroUSD
	}
	charge(100) // seeds 1000, charges 100
	if got := balance(); got != 900 {
		t.Fatalf("balance after one settle %d, want 900", got)
	}

	mark := m.BalanceMarks()["acct"]
	read := int64(900)                   // the reload's read: stored 1000 minus the 100 still queued
	charge(300)                          // charged after the read: in neither the store nor the queue it read
	m.SyncBalance("acct", read+50, mark) // a credit of 50 made elsewhere arrives with the read
	if got := balance(); got != 650 {
		t.Fatalf("balance after the sync %d, want 900 + 50 - 300 = 650 (the settle after the mark kept)", got)
	}

	// A mark taken after every settle: the read is taken as it is.
	m.SyncBalance("acct", 640, m.BalanceMarks()["acct"])
	if got := balance(); got != 640 {
		t.Fatalf("balance %d, want the read 640", got)
	}
	// An account the marks did not list (mark 0) has every settle since the store began
	// subtracted: the balance errs low, never high.
	m.SyncBalance("acct", 1000, 0)
	if got := balance(); got != 600 {
		t.Fatalf("balance with mark 0: %d, want 1000 - 400 charged = 600", got)
	}
}
