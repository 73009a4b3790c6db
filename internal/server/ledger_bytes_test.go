package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/server"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
)

// procWriteBytes is the process's write_bytes so far (/proc/self/io: what it caused to be
// written to storage); false where the kernel does not expose it.
func procWriteBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// maxMeteredWriteBytes is the disk budget this test holds one metered request on the embedded
// store to: its ledger entry, its journal line, its audit record and their share of the
// checkpoints. 4.75 KiB: measured 4.1 KB with the audit's commit window that grows with the
// load (audit.Options.MaxFlushInterval), 5.3 KB with fixed 100 ms windows, 32 KB before the
// ledger was batched. Issue 27's 4 KiB is reached (3.5 KB) only when the ledger's window grows
// too (accounts.WriterOptions.MaxFlushInterval 400 ms), which is not the default yet. Under the race
// detector (CI) every request is several times slower and the process may not keep the pace:
// the batches are smaller, each commit writes whole pages, so the bound there is 12 KiB.
var maxMeteredWriteBytes = map[bool]int64{false: 4864, true: 12 << 10}[raceEnabled]

// TestMeteredRequestDiskWrites (issue 27 item 4): 6000 metered chat completions (a key with a
// budget, on a SQLite file store with its audit written by a Recorder of the production
// defaults), sent at 1000 a second, make the process write at most maxMeteredWriteBytes per
// request to disk, from /proc/self/io (skipped where it is missing), the ledger and the audit
// flushed and a checkpoint run before the count ends. Before issue 27 every reserve was
// committed alone before dispatch and its settle in a batch of its own (about five 4 KiB WAL
// pages per commit): this test measured 32 KB per request then; with fixed 100 ms commit
// windows about 5 KB. It fails on both.
func TestMeteredRequestDiskWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("3000 requests")
	}
	if _, ok := procWriteBytes(); !ok {
		t.Skip("no /proc/self/io write_bytes here")
	}
	st, err := sqlite.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	// The audit writer as switchyard serve runs it (the harness's flushes every 5 ms).
	rec := audit.NewRecorder(st, audit.Options{})
	g := startGatewayOpts(t, st, ledgerCatalog, func(o *server.Options) { o.Recorder = rec }, oa("oa-primary"), oa("oa-backup"))
	ctx, cancel := context.WithCancel(context.Background())
	recDone := make(chan struct{})
	go func() { defer close(recDone); _ = rec.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-recDone })
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"bytes"}`).Get("id").String()
	secret := mustAdmin(t, g, 201, "POST", "/admin/v1/keys",
		`{"account_id":"`+acct+`","name":"k","settings":{"limits":{"budget_usd":1000,"budget_period":"total"}}}`).Get("secret").String()
	for range 50 { // warm: connections, prepared statements, the schema's first pages
		if o := burstPost(g.URL, secret, 0, false); o.status != 200 {
			t.Fatalf("warm-up: %d %v %s", o.status, o.err, o.body)
		}
	}
	flush := func() {
		mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+acct+"/ledger?limit=1", "") // flushes the ledger
		fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer fcancel()
		if err := rec.Flush(fctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // a checkpoint: its writes count
	}
	flush()
	before, _ := procWriteBytes()

	// 6000 requests at 1000 a second, open loop: each of 64 callers sends one every 64 ms.
	const n, parallel, rate = 6000, 64, 1000
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	start := time.Now()
	for w := range parallel {
		wg.Go(func() {
			next := start.Add(time.Duration(w) * time.Second / rate)
			for i := w; i < n; i += parallel {
				time.Sleep(time.Until(next))
				next = next.Add(parallel * time.Second / rate)
				if o := burstPost(g.URL, secret, 0, false); o.status != 200 {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if failed > 0 {
		t.Fatalf("%d of %d requests failed", failed, n)
	}
	t.Logf("%d requests in %v", n, time.Since(start).Round(time.Millisecond))
	flush() // the ledger's and the audit's last batches and a checkpoint: their writes count
	after, _ := procWriteBytes()
	per := (after - before) / n
	t.Logf("%d metered requests: %d bytes written to disk, %d per request (bound %d)", n, after-before, per, maxMeteredWriteBytes)
	if per > maxMeteredWriteBytes {
		t.Errorf("a metered request writes %d bytes to disk, want at most %d", per, maxMeteredWriteBytes)
	}
}
