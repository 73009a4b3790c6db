package replicatest

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, to read the ledger

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// TestSQLiteKillUnderLoad is the crash guarantee on the embedded store (issue 24 item 1): one
// `switchyard serve` on a SQLite file, 16 callers sending metered chat completions (a key with a
// budget, so every request holds money; the provider answers in 2 ms, so most requests end
// before the ledger writer's batch and leave one row), is killed with SIGKILL under load and
// started again on the same file. The restarted process replays the dead one's reserve journal,
// and once the reconciliation has run every request served to a caller has exactly one settle
// or a release with a crash mark, and no reserve is left open. It needs no Postgres or Redis.
func TestSQLiteKillUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and waits for the reconciliation (~15 s)")
	}
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "sy.db")
	provider := fakeprovider.New("oa", catalog.OpenAI)
	provider.DisableControl()
	provider.SetDefault(fakeprovider.Behavior{Delay: 2 * time.Millisecond})
	ps := httptest.NewServer(provider)
	t.Cleanup(ps.Close)
	port := freePort(t)
	r := &replica{url: "http://127.0.0.1:" + port, cfg: filepath.Join(dir, "sy.yaml"), log: filepath.Join(dir, "sy.log")}
	yaml := fmt.Sprintf(`server:
  listen: "127.0.0.1:%s"
  shutdown_grace: 2s
store:
  url: "sqlite://%s"
auth: {required: true}
admin:
  token: %s
models:
  - id: gpt-4o-mini
    price: {input: 1, output: 100}
deployments:
  - name: oa
    provider: openai
    dialect: openai
    base_url: "%s/v1"
    api_key: sk-emulated
    routes: [{model: gpt-4o-mini}]
`, port, dbPath, adminToken, ps.URL)
	if err := os.WriteFile(r.cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &cluster{bin: binary(t), dir: dir, reps: []*replica{r}}
	c.start(t, r)
	t.Cleanup(func() {
		c.kill(r)
		if t.Failed() {
			b, _ := os.ReadFile(r.log)
			t.Logf("log:\n%s", tail(b, 4000))
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	acct, _, secret := c.account(t, `{}`, "", `{"limits":{"budget_usd":1000,"budget_period":"total"}}`)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	var results []chatResult
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				res := chat(ctx, client, r, secret)
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
				if res.status == 0 { // the process is gone
					return
				}
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	c.kill(r)
	killedAt := time.Now()
	stop()
	wg.Wait()
	c.start(t, r)
	if t.Failed() {
		t.FailNow()
	}

	db, err := sql.Open("sqlite", dbPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c.db = db
	served := map[string]bool{}
	for _, res := range results {
		if res.served {
			served[res.requestID] = true
		}
	}
	if len(served) < 100 {
		t.Fatalf("%d requests served before the kill: too few to mean anything", len(served))
	}
	// The dead process's reserves are closed once its heartbeat is older than the replica timeout.
	deadline := time.Now().Add(accounts.DefaultReplicaTimeout + 30*time.Second)
	for c.openReserves(t, acct) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d reserves still open %v after the kill", c.openReserves(t, acct), time.Since(killedAt))
		}
		time.Sleep(100 * time.Millisecond)
	}
	type ends struct {
		reserves, settles int
		releases          []string
	}
	byReq := map[string]*ends{}
	rows := c.ledger(t, acct)
	for _, row := range rows {
		e := byReq[row.requestID]
		if e == nil {
			e = &ends{}
			byReq[row.requestID] = e
		}
		switch accounts.Kind(row.kind) {
		case accounts.KindReserve:
			e.reserves++
		case accounts.KindSettle:
			e.settles++
		case accounts.KindRelease:
			e.releases = append(e.releases, row.mark)
		}
	}
	crashMarks := []string{accounts.MarkUnsettledCrash, accounts.MarkAuditReleased}
	oneRow, settled, marked := 0, 0, 0
	for rid := range served {
		e := byReq[rid]
		switch {
		case e == nil:
			t.Errorf("served request %s has no ledger entry", rid)
		case e.settles > 1 || e.reserves > 1:
			t.Errorf("served request %s: %+v", rid, e)
		case e.settles == 1:
			settled++
			if e.reserves == 0 {
				oneRow++
			}
		case len(e.releases) == 1 && slices.Contains(crashMarks, e.releases[0]):
			marked++
		default:
			t.Errorf("served request %s has neither a settle nor a crash mark: %+v", rid, e)
		}
	}
	for rid, e := range byReq {
		if e.reserves == 1 && e.settles == 0 && len(e.releases) == 0 {
			t.Errorf("request %s: reserve without an end after reconciliation", rid)
		}
	}
	if oneRow == 0 {
		t.Errorf("no served request has its settle alone: the settles never took their reserve's place (or the replay wrote back reserves that had ended)")
	}
	t.Logf("kill -9 under load on SQLite: %d requests served, %d settled (%d in one row), %d closed with a crash mark, none without a trace; %d ledger rows; all reserves closed %v after the kill",
		len(served), settled, oneRow, marked, len(rows), time.Since(killedAt).Round(100*time.Millisecond))
}
