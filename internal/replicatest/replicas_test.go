package replicatest

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// TestReplicas starts 3 replicas once and runs the multi-process claims on them in order.
func TestReplicas(t *testing.T) {
	c := newCluster(t, 3)
	t.Run("RevokedKeyRefusedEverywhereWithinOneSecond", func(t *testing.T) { testRevocation(t, c) })
	t.Run("KillUnderLoadLeavesEveryServedRequestInTheLedger", func(t *testing.T) { testKillUnderLoad(t, c) })
}

// testRevocation: a key created through replica 0 works on every replica, and once revoked
// through replica 0 is refused (401) by each of the others within 1 s, their reload poll being an
// hour: the change feed carries it. Five rounds; the slowest is logged (docs/deploy.md).
func testRevocation(t *testing.T, c *cluster) {
	c.t = t
	client := &http.Client{Timeout: 5 * time.Second}
	var worst time.Duration
	for round := range 5 {
		_, keyID, secret := c.account(`{}`, "", `{}`)
		for _, r := range c.reps { // the new key reaches every replica through the feed too
			deadline := time.Now().Add(5 * time.Second)
			for modelsStatus(client, r, secret) != 200 {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: replica %d does not accept a key created on replica 0 within 5 s", round, r.i)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		revoked := time.Now()
		c.admin(c.reps[0], 204, "DELETE", "/admin/v1/keys/"+keyID, "", nil)
		var wg sync.WaitGroup
		lat := make([]time.Duration, len(c.reps))
		for _, r := range c.reps {
			wg.Go(func() {
				for modelsStatus(client, r, secret) != 401 {
					if time.Since(revoked) > 5*time.Second {
						lat[r.i] = -1
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
				lat[r.i] = time.Since(revoked)
			})
		}
		wg.Wait()
		for i, d := range lat {
			if d < 0 || d > time.Second {
				t.Errorf("round %d: replica %d refused the revoked key after %v, want within 1 s (-1: not in 5 s)", round, i, d)
			}
			worst = max(worst, d)
		}
		t.Logf("round %d: revoked key refused after %v (replicas 0, 1, 2; from the DELETE's start)", round, lat)
	}
	t.Logf("slowest refusal of a revoked key on any replica: %v", worst)
}

// testKillUnderLoad: 24 callers send chat completions round robin to the 3 replicas (a prepaid
// account, so every request holds money); replica 2 is killed with SIGKILL in the middle, the
// load goes on, then replica 2 is restarted. Once the reserves of the dead process are
// reconciled (its heartbeat stops; any replica closes them), every request served to a caller
// has exactly one settle, or a release marked by the reconciliation; no reserve is left open;
// and the stored balance is the credits minus the settles.
func testKillUnderLoad(t *testing.T, c *cluster) {
	c.t = t
	const creditMicro = 100_000_000
	acct, _, secret := c.account(`{"billing":"prepaid"}`, "100", `{}`)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	var results []chatResult
	var wg sync.WaitGroup
	killed := make(chan struct{})
	for w := range 24 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				r := c.reps[(w+i)%len(c.reps)]
				select {
				case <-killed:
					if r.i == 2 {
						continue
					}
				default:
				}
				res := chat(ctx, client, r, secret)
				if ctx.Err() != nil && !res.served {
					return
				}
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	c.kill(c.reps[2])
	killedAt := time.Now()
	close(killed)
	time.Sleep(1000 * time.Millisecond)
	stop()
	wg.Wait()
	c.start(c.reps[2])
	if t.Failed() {
		t.FailNow()
	}

	served := map[string]int{} // request id -> replica
	servedBy := make([]int, 3)
	failed := 0
	for _, r := range results {
		if r.served {
			served[r.requestID] = r.replica
			servedBy[r.replica]++
		} else {
			failed++
		}
	}
	if servedBy[2] == 0 || servedBy[0] == 0 {
		t.Fatalf("served per replica %v: the load did not reach every replica", servedBy)
	}

	// The dead process's reserves are closed once its heartbeat is older than the replica timeout.
	deadline := time.Now().Add(accounts.DefaultReplicaTimeout + 30*time.Second)
	for c.openReserves(acct) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d reserves still open %v after the kill", c.openReserves(acct), time.Since(killedAt))
		}
		time.Sleep(100 * time.Millisecond)
	}
	reconciledAfter := time.Since(killedAt)

	rows := c.ledger(acct)
	type ends struct {
		settles  int
		releases []string // marks
		reserves int
	}
	byReq := map[string]*ends{}
	var settled int64
	marks := map[string]int{}
	for _, r := range rows {
		e := byReq[r.requestID]
		if e == nil {
			e = &ends{}
			byReq[r.requestID] = e
		}
		switch accounts.Kind(r.kind) {
		case accounts.KindSettle:
			e.settles++
			settled += r.micro
			if r.mark == accounts.MarkAuditSettled {
				marks[r.mark]++
			}
		case accounts.KindRelease:
			e.releases = append(e.releases, r.mark)
			if r.mark != "" {
				marks[r.mark]++
			}
		case accounts.KindReserve:
			e.reserves++
		}
	}
	crashMarks := []string{accounts.MarkUnsettledCrash, accounts.MarkAuditReleased}
	servedSettled, servedMarked := 0, 0
	for rid, rep := range served {
		e := byReq[rid]
		switch {
		case e == nil || e.reserves != 1:
			t.Errorf("served request %s (replica %d) has no reserve entry: %+v", rid, rep, e)
		case e.settles > 1:
			t.Errorf("served request %s has %d settles", rid, e.settles)
		case e.settles == 1:
			servedSettled++
		case len(e.releases) == 1 && slices.Contains(crashMarks, e.releases[0]):
			servedMarked++
			if rep != 2 {
				t.Errorf("served request %s of live replica %d closed by the reconciliation (%s)", rid, rep, e.releases[0])
			}
		default:
			t.Errorf("served request %s (replica %d) has neither a settle nor a crash mark: %+v", rid, rep, e)
		}
	}
	for rid, e := range byReq {
		if rid != "" && e.reserves == 1 && e.settles == 0 && len(e.releases) == 0 {
			t.Errorf("request %s: reserve without an end after reconciliation", rid)
		}
	}
	if got, want := c.balance(acct), int64(creditMicro)-settled; got != want {
		t.Errorf("stored balance %d micro-USD, want credits %d - settles %d = %d", got, creditMicro, settled, want)
	}
	t.Logf("kill -9 under load: %d requests served (per replica %v), %d not served (connections cut by the kill, or cancelled at the end); "+
		"of the served, %d settled and %d closed with a crash mark, none without a trace; reconciliation marks %v; all reserves closed %v after the kill",
		len(served), servedBy, failed, servedSettled, servedMarked, marks, reconciledAfter.Round(100*time.Millisecond))
}
