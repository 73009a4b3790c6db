package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// TestNoBusyUnderContention (issue 15 item 3): audit batches, ledger batches, admin changes,
// heartbeats, readers and checkpoints all at once on one file database never see
// SQLITE_BUSY, and everything written is there afterwards. The writer connection's
// busy_timeout is set to 0, so any write that had to wait for SQLite's write lock, held by
// another connection of this process, would fail at once instead of waiting: the test shows
// that no two connections of the process ever write, not merely that waits stay short.
func TestNoBusyUnderContention(t *testing.T) {
	writerBusyTimeout = 0
	t.Cleanup(func() { writerBusyTimeout = busyTimeout })
	db := open(t, fileURL(t))
	ctx := context.Background()
	var busy int
	if err := db.db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil || busy != 0 {
		t.Fatalf("writer busy_timeout = %d, %v; want 0", busy, err)
	}
	const accts = 4
	for i := range accts {
		if err := db.CreateAccount(ctx, &accounts.Account{ID: fmt.Sprintf("a%d", i), Billing: accounts.Prepaid}); err != nil {
			t.Fatal(err)
		}
	}
	const (
		auditWriters, auditBatches, perBatch = 3, 10, 30
		ledgerWriters, ledgerBatches         = 2, 20
		adminWriters, adminRounds            = 2, 20
	)
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	fail := func(what string, err error) {
		select {
		case errc <- fmt.Errorf("%s: %w", what, err):
		default:
		}
	}
	for w := range auditWriters {
		wg.Go(func() {
			for b := range auditBatches {
				recs := make([]*audit.Record, perBatch)
				for i := range recs {
					recs[i] = storetest.FullRecord(fmt.Sprintf("req_w%d_b%d_%d", w, b, i))
				}
				if err := db.WriteRecords(ctx, recs); err != nil {
					fail("audit batch", err)
					return
				}
			}
		})
	}
	for w := range ledgerWriters {
		wg.Go(func() {
			for b := range ledgerBatches {
				at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
				var es []accounts.LedgerEntry
				for i := range 10 {
					rid := fmt.Sprintf("lw%d_b%d_%d", w, b, i)
					acct := fmt.Sprintf("a%d", i%accts)
					es = append(es,
						accounts.LedgerEntry{At: at, AccountID: acct, KeyID: "k", RequestID: rid, Kind: accounts.KindReserve, AmountMicroUSD: 10, Replica: "rep_1"},
						accounts.LedgerEntry{At: at, AccountID: acct, KeyID: "k", RequestID: rid, Kind: accounts.KindSettle, AmountMicroUSD: 3})
				}
				if err := db.AppendLedger(ctx, es); err != nil {
					fail("ledger batch", err)
					return
				}
			}
		})
	}
	for w := range adminWriters {
		wg.Go(func() {
			for r := range adminRounds {
				acct := fmt.Sprintf("a%d", r%accts)
				if _, err := db.Credit(ctx, &accounts.LedgerEntry{AccountID: acct, Kind: accounts.KindCredit, AmountMicroUSD: 1000}); err != nil {
					fail("credit", err)
					return
				}
				if _, err := db.UpdateAccount(ctx, acct, func(a *accounts.Account) error {
					a.Name = fmt.Sprintf("w%d r%d", w, r)
					return nil
				}); err != nil {
					fail("account update", err)
					return
				}
				if err := db.SetRoutable(ctx, accounts.RoutableOverride{Deployment: fmt.Sprintf("d%d", w), Disabled: r%2 == 0, UpdatedAt: time.Now()}); err != nil {
					fail("routable", err)
					return
				}
				if err := db.Heartbeat(ctx, fmt.Sprintf("rep_%d", w), time.Now(), time.Now()); err != nil {
					fail("heartbeat", err)
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() { // readers and checkpoints beside the writers
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := db.Record(ctx, fmt.Sprintf("req_w0_b%d_0", i%auditBatches)); err != nil && !errors.Is(err, audit.ErrNotFound) {
				fail("audit read", err)
				return
			}
			if _, err := db.Ledger(ctx, "a0", 20); err != nil {
				fail("ledger read", err)
				return
			}
			if err := db.checkpoint(ctx); err != nil {
				fail("checkpoint", err)
				return
			}
		}
	})
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errc)
	for err := range errc {
		if strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked") {
			t.Errorf("busy error reached a caller: %v", err)
		} else {
			t.Error(err)
		}
	}
	if t.Failed() {
		return
	}
	var nreq, nledger int
	if err := db.rdb.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM requests), (SELECT COUNT(*) FROM ledger)").
		Scan(&nreq, &nledger); err != nil {
		t.Fatal(err)
	}
	if want := auditWriters * auditBatches * perBatch; nreq != want {
		t.Errorf("%d audit records stored, want %d", nreq, want)
	}
	if want := ledgerWriters*ledgerBatches*20 + adminWriters*adminRounds; nledger != want {
		t.Errorf("%d ledger entries stored, want %d", nledger, want)
	}
	want := make([]int64, accts) // credits of 1000 per admin round, settles of 3 per entry
	for r := range adminRounds {
		want[r%accts] += adminWriters * 1000
	}
	for i := range 10 {
		want[i%accts] -= ledgerWriters * ledgerBatches * 3
	}
	for i := range accts {
		a, err := db.Account(ctx, fmt.Sprintf("a%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if a.BalanceMicroUSD != want[i] {
			t.Errorf("account a%d balance %d, want %d", i, a.BalanceMicroUSD, want[i])
		}
	}
}

// BenchmarkAppendLedger: the ledger writer's batches as at 500 keyed req/s (50 requests, a
// reserve and a settle each, per 100 ms batch) on a ledger that already holds 20,000 requests;
// cpu-ns/entry is the process's CPU time per ledger entry.
func BenchmarkAppendLedger(b *testing.B) {
	db := open(b, fileURL(b))
	ctx := context.Background()
	if err := db.CreateAccount(ctx, &accounts.Account{ID: "a", Billing: accounts.Prepaid}); err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	batch := func(prefix string, n int) []accounts.LedgerEntry {
		es := make([]accounts.LedgerEntry, 0, 2*n)
		for i := range n {
			rid := fmt.Sprintf("req_%s_%06d", prefix, i)
			es = append(es,
				accounts.LedgerEntry{At: at, AccountID: "a", KeyID: "k", RequestID: rid, Kind: accounts.KindReserve, AmountMicroUSD: 10, Replica: "rep_1"},
				accounts.LedgerEntry{At: at, AccountID: "a", KeyID: "k", RequestID: rid, Kind: accounts.KindSettle, AmountMicroUSD: 3})
		}
		return es
	}
	for i := range 40 {
		if err := db.AppendLedger(ctx, batch(fmt.Sprintf("pre%02d", i), 500)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		if err := db.AppendLedger(ctx, batch(fmt.Sprintf("b%06d", n), 50)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n*100), "cpu-ns/entry")
}

// cpuTime is the process's user and system CPU time so far, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestCheckpointsKeepTheWALSmall: with the writer's own checkpoints off, the checkpointer's
// PASSIVE checkpoints let the WAL restart from its beginning: writing many times its size
// leaves it at the size of a few batches, and every record is readable.
func TestCheckpointsKeepTheWALSmall(t *testing.T) {
	db := open(t, fileURL(t))
	ctx := context.Background()
	const batches, perBatch = 60, 100
	for b := range batches {
		recs := make([]*audit.Record, perBatch)
		for i := range recs {
			recs[i] = storetest.FullRecord(fmt.Sprintf("req_%03d_%03d", b, i))
		}
		if err := db.WriteRecords(ctx, recs); err != nil {
			t.Fatal(err)
		}
		if err := db.checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(db.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.Stat(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	// 6000 records are about 3 MB in the database file; a batch is about 50 KB of WAL frames.
	if fi.Size() > main.Size()/4 {
		t.Errorf("WAL is %d bytes beside a database of %d: checkpoints do not let it restart", fi.Size(), main.Size())
	}
	if _, err := db.Record(ctx, "req_059_099"); err != nil {
		t.Error(err)
	}
}

// TestWALBoundedUnderReaders (issue 27 item 3): while readers keep overlapping read
// transactions open (there is never a moment without one, so no passive checkpoint lets the WAL
// restart), the checkpointer's TRUNCATE checkpoint past walBound keeps the WAL below the bound
// plus the writes between two checkpoints; without it the WAL grows with every batch.
func TestWALBoundedUnderReaders(t *testing.T) {
	const bound = 1 << 20
	walBound.Store(bound)
	t.Cleanup(func() { walBound.Store(defaultWALBound) }) // after the store's Close (registered later, run earlier)
	db := open(t, fileURL(t))
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			time.Sleep(time.Duration(r) * 3 * time.Millisecond) // overlapping, never all closed at once
			for ctx.Err() == nil {
				tx, err := db.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
				if err != nil {
					continue
				}
				var n int
				_ = tx.QueryRowContext(ctx, "SELECT count(*) FROM requests").Scan(&n)
				time.Sleep(6 * time.Millisecond) // a read transaction of a few ms, as a list page
				_ = tx.Rollback()
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	var peak int64
	for b := range 120 {
		recs := make([]*audit.Record, 100)
		for i := range recs {
			recs[i] = storetest.FullRecord(fmt.Sprintf("req_%03d_%03d", b, i))
		}
		if err := db.WriteRecords(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
		if err := db.checkpoint(context.Background()); err != nil {
			t.Logf("checkpoint: %v", err)
		}
		if fi, err := os.Stat(db.Path() + "-wal"); err == nil {
			peak = max(peak, fi.Size())
		}
	}
	if peak > bound+bound/2 {
		t.Errorf("WAL peaked at %d bytes under overlapping readers, want at most the bound %d plus a batch", peak, bound)
	}
	t.Logf("WAL peak %d bytes (bound %d)", peak, bound)
}
