package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
)

// redisStore opens a Redis admission store on SWITCHYARD_TEST_REDIS_URL under prefix (every
// replica of a test shares it), or skips the test.
func redisStore(t *testing.T, prefix string, now func() time.Time) *admission.Redis {
	t.Helper()
	url := os.Getenv("SWITCHYARD_TEST_REDIS_URL")
	if url == "" {
		t.Skip("SWITCHYARD_TEST_REDIS_URL is not set: the replicas-on-one-Redis tests are skipped (e.g. SWITCHYARD_TEST_REDIS_URL=redis://127.0.0.1:6379/0)")
	}
	r, err := admission.OpenRedis(url, admission.RedisOptions{Prefix: prefix, Timeout: 2 * time.Second, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// freshPrefix is a key prefix of the test's own, deleted at its end.
func freshPrefix(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := "sytest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		url := os.Getenv("SWITCHYARD_TEST_REDIS_URL")
		if url == "" {
			return
		}
		opt, err := redis.ParseURL(url)
		if err != nil {
			return
		}
		c := redis.NewClient(opt)
		defer c.Close()
		ctx := context.Background()
		it := c.Scan(ctx, 0, p+"*", 1000).Iterator()
		for it.Next(ctx) {
			c.Del(ctx, it.Val())
		}
	})
	return p
}

// startReplica starts one gateway of the limits catalog on its own SQLite store and on admit.
func startReplica(t *testing.T, admit admission.Store) *gateway {
	t.Helper()
	st, err := sqlite.Open(context.Background(), "sqlite://:memory:")
	if err != nil {
		t.Fatal(err)
	}
	return startGatewayWith(t, st, admit, limitsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
}

// TestReplicasShareLimits: R-BILL-4, issue 10: two gateways on one Redis admission store act
// as one: a key's rpm and its budget are enforced across both, through the real request path
// (the reservation of serveModelCall), not per replica.
func TestReplicasShareLimits(t *testing.T) {
	p := freshPrefix(t)
	a := startReplica(t, redisStore(t, p, nil))
	b := startReplica(t, redisStore(t, p, nil))
	for i, g := range []*gateway{a, b} {
		if resp, body := postKey(t, g, oaSurface, "sk-rpm2", limitBody(oaSurface, false)); resp.StatusCode != 200 {
			t.Fatalf("replica %d: %d %s", i, resp.StatusCode, body)
		}
	}
	for _, g := range []*gateway{a, b} {
		resp, body := postKey(t, g, oaSurface, "sk-rpm2", limitBody(oaSurface, false))
		if resp.StatusCode != 429 || resp.Header.Get("X-Switchyard-Limit-Kind") != "rpm" {
			t.Fatalf("third request of an rpm-2 key across two replicas: %d %s", resp.StatusCode, body)
		}
	}
	// sk-budget: $0.005 in total; a request of gpt-4o-mini (100 USD/MTok output in this
	// catalog) with max_tokens 40 reserves $0.004009: one fits, a second in flight on the other
	// replica does not while the first holds its reserve.
	big := `{"model":"gpt-4o-mini","max_tokens":40,"messages":[{"role":"user","content":"Hello"}]}`
	a.Fakes["oa-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindSlowHeaders, Delay: 500 * time.Millisecond})
	before := a.Fakes["oa-primary"].Hits()
	done := make(chan string, 1)
	go func() {
		resp, body := postKey(t, a, oaSurface, "sk-budget", big)
		done <- strconv.Itoa(resp.StatusCode) + " " + string(body)
	}()
	waitFor(t, func() bool {
		select {
		case got := <-done:
			t.Fatalf("the first request ended early: %s", got)
		default:
		}
		return a.Fakes["oa-primary"].Hits() > before
	})
	resp, body := postKey(t, b, oaSurface, "sk-budget", big)
	if resp.StatusCode != 402 || resp.Header.Get("X-Switchyard-Limit-Kind") != "budget" || !strings.Contains(string(body), "insufficient budget") {
		t.Fatalf("a second reserve on the other replica: %d %s, want 402 budget", resp.StatusCode, body)
	}
	if got := <-done; !strings.HasPrefix(got, "200 ") {
		t.Fatalf("the first request: %s", got)
	}
}

// TestReplicaDegraded: issue 10 "degraded mode", end to end: with the admission store's Redis
// unreachable, a metered request (a key with a budget) is refused with a 503 naming the store
// and an unmetered one (rpm only) is served on the replica's own counters.
func TestReplicaDegraded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r, err := admission.OpenRedis("redis://"+addr+"/0", admission.RedisOptions{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	g := startReplica(t, r)
	resp, body := postKey(t, g, oaSurface, "sk-budget", limitBody(oaSurface, false))
	if resp.StatusCode != 503 || resp.Header.Get("X-Switchyard-Error-Code") != "gateway_error" || !strings.Contains(string(body), "admission store (redis)") {
		t.Fatalf("metered request with Redis down: %d %s, want 503 naming the store", resp.StatusCode, body)
	}
	for i := range 2 {
		if resp, body := postKey(t, g, oaSurface, "sk-rpm2", limitBody(oaSurface, false)); resp.StatusCode != 200 {
			t.Fatalf("unmetered request %d with Redis down: %d %s", i, resp.StatusCode, body)
		}
	}
	if resp, _ := postKey(t, g, oaSurface, "sk-rpm2", limitBody(oaSurface, false)); resp.StatusCode != 429 {
		t.Fatalf("the local rpm did not hold: %d", resp.StatusCode)
	}
}

// TestRestartGrantsNoBudget: issue 10 "one replica restarting alone re-grants the whole
// budget": a gateway started again on the same store (memory:// admission, one process) reads
// the key's spend back from the ledger before its first metered request, so the budget spent
// before the restart stays spent.
func TestRestartGrantsNoBudget(t *testing.T) {
	url := "sqlite://" + filepath.ToSlash(filepath.Join(t.TempDir(), "ledger.db"))
	open := func() *sqlite.DB {
		st, err := sqlite.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	fakes := []fakeSpec{oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup")}
	budget := admission.Layer{Scope: admission.ScopeKey, ID: "budget", Limits: admission.Limits{BudgetPeriod: admission.PeriodTotal}}
	st1 := open()
	a := startGatewayStore(t, st1, limitsCatalog, fakes...)
	if resp, body := postKey(t, a, oaSurface, "sk-budget", limitBody(oaSurface, false)); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	u, _ := a.Admission.Usage(t.Context(), budget)
	spent := u.SpentMicroUSD
	if spent <= 0 {
		t.Fatalf("nothing spent: %+v", u)
	}
	waitFor(t, func() bool { // the ledger writer is asynchronous
		n, err := st1.SettledMicroUSD(t.Context(), accounts.SettleFilter{KeyID: "budget"})
		return err == nil && n == spent
	})
	b := startGatewayStore(t, open(), limitsCatalog, fakes...) // the restarted process
	if resp, body := postKey(t, b, oaSurface, "sk-budget", limitBody(oaSurface, false)); resp.StatusCode != 200 {
		t.Fatalf("after the restart: %d %s", resp.StatusCode, body)
	}
	if u, _ := b.Admission.Usage(t.Context(), budget); u.SpentMicroUSD != 2*spent {
		t.Fatalf("spend after the restart = %d, want %d (the %d before it, read from the ledger, and this request's)", u.SpentMicroUSD, 2*spent, spent)
	}
}

// TestReplicasSharePauses: R-CIRCUIT-4 across replicas (issue 10 scope 3): a provider that
// answers one replica with a 429 and a retry-after is skipped by the other replica's routing
// too, through the pause it reads from its local copy (no Redis call when planning); circuits
// stay per replica.
func TestReplicasSharePauses(t *testing.T) {
	p := freshPrefix(t)
	// The gateways' clocks start at the same instant and stay there; the stores read it too.
	fixed := func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	sa, sb := redisStore(t, p, fixed), redisStore(t, p, fixed)
	a := startReplica(t, sa)
	b := startReplica(t, sb)
	a.Fakes["oa-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 429, RetryAfter: 20})
	if resp, body := postKey(t, a, oaSurface, "sk-free", limitBody(oaSurface, false)); resp.StatusCode != 200 {
		t.Fatalf("replica a: %d %s (the 429 fails over)", resp.StatusCode, body)
	}
	waitFor(t, func() bool { return b.Srv.Circuits().Open("openai", "oa-primary", "gpt-4o-mini") })
	if resp, body := postKey(t, b, oaSurface, "sk-free", limitBody(oaSurface, false)); resp.StatusCode != 200 {
		t.Fatalf("replica b: %d %s", resp.StatusCode, body)
	}
	if n := b.Fakes["oa-primary"].Hits(); n != 0 {
		t.Errorf("replica b sent %d requests to the paused provider", n)
	}
	if n := b.Fakes["oa-backup"].Hits(); n != 1 {
		t.Errorf("replica b's backup saw %d requests, want 1", n)
	}
	if st := b.Srv.Circuits().States(); len(st) != 2 || st[0].Deployment != "oa-backup" {
		t.Errorf("replica b's circuits %+v: only its own attempt's (circuits are not shared)", st)
	}
}
