package accountsql_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
)

// TestLedgerStatementsPreparedOnce: the ledger writer prepares its statements once, at its
// first batch, and reuses them (issue 15: preparing a new multi-row INSERT for every batch was
// half of its CPU with keyed requests); a batch is written in power-of-two chunks of those
// shapes. Batches of every size from 1 to 40, mixing reserves, settles and releases, each
// written twice (a retried batch), store exactly: every entry once, the balance reduced by
// every settle once, and the reserves without an end still open.
func TestLedgerStatementsPreparedOnce(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, "sqlite://"+filepath.ToSlash(filepath.Join(t.TempDir(), "s.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateAccount(ctx, &accounts.Account{ID: "acct_p", Name: "p"}); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_800_000_000, 0).UTC()
	var settledMicro int64
	var first any
	n := 0
	for size := 1; size <= 40; size++ {
		var batch []accounts.LedgerEntry
		for len(batch) < size {
			rid := fmt.Sprintf("req_%06d", n)
			n++
			batch = append(batch, accounts.LedgerEntry{At: at, AccountID: "acct_p", RequestID: rid, Kind: accounts.KindReserve, AmountMicroUSD: 50})
			if len(batch) < size {
				kind, amount := accounts.KindSettle, int64(7)
				if n%3 == 0 {
					kind, amount = accounts.KindRelease, 0
				}
				batch = append(batch, accounts.LedgerEntry{At: at, AccountID: "acct_p", RequestID: rid, Kind: kind, AmountMicroUSD: amount})
				settledMicro += amount
			}
		}
		if err := db.AppendLedger(ctx, batch); err != nil {
			t.Fatalf("batch of %d: %v", size, err)
		}
		if size == 1 {
			first = db.LedgerStatements()
		}
		// The same batch again (a retried write) changes nothing.
		if err := db.AppendLedger(ctx, batch); err != nil {
			t.Fatalf("batch of %d again: %v", size, err)
		}
	}
	if db.LedgerStatements() != first {
		t.Fatal("the ledger writer's statements were prepared again")
	}
	acct, err := db.Account(ctx, "acct_p")
	if err != nil {
		t.Fatal(err)
	}
	if acct.BalanceMicroUSD != -settledMicro {
		t.Fatalf("balance %d micro-USD, want %d (every settle once)", acct.BalanceMicroUSD, -settledMicro)
	}
	entries, err := db.Ledger(ctx, "acct_p", 100000)
	if err != nil {
		t.Fatal(err)
	}
	var reserves, ends int
	for _, e := range entries {
		if e.Kind == accounts.KindReserve {
			reserves++
		} else {
			ends++
		}
	}
	if reserves != n {
		t.Fatalf("%d reserves stored, want %d (each once)", reserves, n)
	}
	open, err := db.OpenReserves(ctx, at.Add(time.Hour), "rep_reader", 100000)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != reserves-ends {
		t.Fatalf("%d reserves open, want %d (reserves without a settle or release)", len(open), reserves-ends)
	}
}
