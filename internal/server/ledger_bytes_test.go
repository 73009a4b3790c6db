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
// checkpoints. 10 KiB: measured 5.8-7.2 KB on this branch, 32 KB before it (issue 27's target
// of 4 KiB is not met yet: the audit record and the checkpoints' second copy of each WAL page
// are most of what is left; docs/performance.md "Bytes written per request"). Under the race
// detector (CI) every request is several times slower, the ledger's group commits carry fewer
// entries and each writes whole pages: measured 19 KB there, so the bound is 28 KiB, still
// below the 32 KB that every metered request wrote before batching.
var maxMeteredWriteBytes = map[bool]int64{false: 10 << 10, true: 28 << 10}[raceEnabled]

// TestMeteredRequestDiskWrites (issue 27 item 4): 3000 metered chat completions (a key with a
// budget, on a SQLite file store with its audit), 8 at a time, make the process write at most
// maxMeteredWriteBytes per request to disk, from /proc/self/io (skipped where it is missing),
// the ledger flushed and a checkpoint run before the count ends. Before issue 27 every reserve
// was committed alone before dispatch and its settle in a batch of its own (about five 4 KiB
// WAL pages per commit): this test measured 32 KB per request then, and fails on that code.
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
	g := startGatewayStore(t, st, ledgerCatalog, oa("oa-primary"), oa("oa-backup"))
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"bytes"}`).Get("id").String()
	secret := mustAdmin(t, g, 201, "POST", "/admin/v1/keys",
		`{"account_id":"`+acct+`","name":"k","settings":{"limits":{"budget_usd":1000,"budget_period":"total"}}}`).Get("secret").String()
	for range 50 { // warm: connections, prepared statements, the schema's first pages
		if o := burstPost(g.URL, secret, 0, false); o.status != 200 {
			t.Fatalf("warm-up: %d %v %s", o.status, o.err, o.body)
		}
	}
	mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+acct+"/ledger?limit=1", "") // flushes the ledger
	time.Sleep(1500 * time.Millisecond)                                           // a checkpoint
	before, _ := procWriteBytes()

	const n, parallel = 3000, 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for w := range parallel {
		wg.Go(func() {
			for i := w; i < n; i += parallel {
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
	mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+acct+"/ledger?limit=1", "")
	time.Sleep(1500 * time.Millisecond) // the audit writer's batch and a checkpoint: their writes count
	after, _ := procWriteBytes()
	per := (after - before) / n
	t.Logf("%d metered requests: %d bytes written to disk, %d per request (bound %d)", n, after-before, per, maxMeteredWriteBytes)
	if per > maxMeteredWriteBytes {
		t.Errorf("a metered request writes %d bytes to disk, want at most %d", per, maxMeteredWriteBytes)
	}
}
