package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// testAccountLedgerSnapshot: AccountLedger (the admin API's GET .../ledger) reads the balance
// and the entries in one snapshot: while credits are written concurrently, every read's balance
// is exactly the sum of the entries it returned. Two separate reads (Account, then Ledger) let
// a credit land between them and disagree. A store without AccountLedger is skipped.
func testAccountLedgerSnapshot(t *testing.T, st accounts.Store) {
	ls, ok := st.(interface {
		AccountLedger(ctx context.Context, accountID string, limit int) (*accounts.Account, []accounts.LedgerEntry, error)
	})
	if !ok {
		t.Skip("the store reads no ledger snapshot")
	}
	seed(t, st)
	const credits = 300
	var wg sync.WaitGroup
	wg.Go(func() {
		for range credits {
			if _, err := st.Credit(bg, &accounts.LedgerEntry{AccountID: "a1", Kind: accounts.KindCredit, AmountMicroUSD: 7}); err != nil {
				t.Errorf("credit: %v", err)
				return
			}
		}
	})
	for n := 0; ; n++ {
		acct, es, err := ls.AccountLedger(bg, "a1", 0)
		if err != nil {
			t.Error(err)
			break
		}
		var sum int64
		for _, e := range es {
			sum += e.AmountMicroUSD
		}
		if acct == nil || acct.BalanceMicroUSD != sum {
			t.Errorf("read %d: balance %+v, want the sum of its %d entries %d", n, acct, len(es), sum)
			break
		}
		if len(es) == credits {
			break
		}
	}
	wg.Wait() // the credits end before the test does, failed or not
	if t.Failed() {
		return
	}
	if acct, es, err := ls.AccountLedger(bg, "nope", 0); err != nil || acct != nil || len(es) != 0 {
		t.Fatalf("an account not stored: %+v %d entries, %v; want nil, none, no error", acct, len(es), err)
	}
}
