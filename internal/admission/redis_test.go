package admission_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/admission/admissiontest"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// redisURL returns SWITCHYARD_TEST_REDIS_URL or skips the test.
func redisURL(t testing.TB) string {
	u := os.Getenv("SWITCHYARD_TEST_REDIS_URL")
	if u == "" {
		t.Skip("SWITCHYARD_TEST_REDIS_URL is not set: the Redis admission store is not tested (e.g. SWITCHYARD_TEST_REDIS_URL=redis://127.0.0.1:6379/0)")
	}
	return u
}

// testPrefix is a fresh key prefix, whose keys are deleted when the test ends.
func testPrefix(t testing.TB, url string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := "sytest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() { flushPrefix(t, url, p) })
	return p
}

func flushPrefix(t testing.TB, url, prefix string) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
}

func openRedis(t testing.TB, url, prefix string, o admission.RedisOptions) *admission.Redis {
	o.Prefix = prefix
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second // the race detector on 2 shared cores is slow; production is 100 ms
	}
	r, err := admission.OpenRedis(url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestRedis runs the behaviour suite on the Redis store; each Open is another replica (or a
// restarted one) over the same keys.
func TestRedis(t *testing.T) {
	url := redisURL(t)
	admissiontest.Run(t, admissiontest.Backend{
		Open: func(t *testing.T, now func() time.Time, seeder admission.Seeder) admission.Store {
			// Leases outlive the suite's clock jumps (Run is not renewing them here).
			return openRedis(t, url, prefixOf(t, url), admission.RedisOptions{Now: now, Seeder: seeder, LeaseTTL: 1000 * 24 * time.Hour})
		},
		Flush: func(t *testing.T) { flushPrefix(t, url, prefixOf(t, url)) },
	})
}

var prefixes sync.Map // test name -> prefix

// prefixOf is the key prefix of the running (sub)test: every store a test opens shares it.
func prefixOf(t *testing.T, url string) string {
	if p, ok := prefixes.Load(t.Name()); ok {
		return p.(string)
	}
	p := testPrefix(t, url)
	prefixes.Store(t.Name(), p)
	t.Cleanup(func() { prefixes.Delete(t.Name()) }) // a rerun (-count) gets keys of its own
	return p
}

// TestRedisLeaseExpiry: a replica that dies with holds in flight (no Release, no lease renewal)
// gives their concurrency slots and reserves back when the leases expire.
func TestRedisLeaseExpiry(t *testing.T) {
	url := redisURL(t)
	p := testPrefix(t, url)
	ck := admissiontest.NewClock()
	dead := openRedis(t, url, p, admission.RedisOptions{Now: ck.Now, LeaseTTL: 30 * time.Second})
	ly := []admission.Layer{{Scope: admission.ScopeKey, ID: "k", Limits: admission.Limits{Concurrency: 2, BudgetMicroUSD: 1000}}}
	req := admission.Request{Layers: ly, ReserveMicroUSD: 500}
	for range 2 {
		if _, err := dead.Acquire(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	live := openRedis(t, url, p, admission.RedisOptions{Now: ck.Now})
	_, err := live.Acquire(context.Background(), req)
	if fe := failure.From(err); fe == nil || fe.LimitKind != admission.KindConcurrency {
		t.Fatalf("err = %v, want the concurrency refusal while the leases live", err)
	}
	ck.Advance(29 * time.Second)
	if _, err := live.Acquire(context.Background(), req); err == nil {
		t.Fatal("admitted before the leases expired")
	}
	ck.Advance(2 * time.Second)
	h, err := live.Acquire(context.Background(), req)
	if err != nil {
		t.Fatalf("the dead replica's slots did not come back: %v", err)
	}
	if u, _ := live.Usage(context.Background(), ly[0]); u.InFlight != 1 || u.ReservedMicroUSD != 500 {
		t.Errorf("usage %+v, want 1 in flight and 500 reserved", u)
	}
	h.Release()
}

// TestRedisRenewal: renewing the leases of live holds (Run does it every LeaseTTL/3) keeps a
// long request's slot past the first lease.
func TestRedisRenewal(t *testing.T) {
	url := redisURL(t)
	p := testPrefix(t, url)
	ck := admissiontest.NewClock()
	r := openRedis(t, url, p, admission.RedisOptions{Now: ck.Now, LeaseTTL: 30 * time.Second})
	ly := []admission.Layer{{Scope: admission.ScopeKey, ID: "k", Limits: admission.Limits{Concurrency: 1}}}
	h, err := r.Acquire(context.Background(), admission.Request{Layers: ly})
	if err != nil {
		t.Fatal(err)
	}
	other := openRedis(t, url, p, admission.RedisOptions{Now: ck.Now})
	for range 3 {
		ck.Advance(20 * time.Second)
		r.RenewLeases(context.Background())
	}
	ck.Advance(20 * time.Second)
	if _, err := other.Acquire(context.Background(), admission.Request{Layers: ly}); err == nil {
		t.Fatal("a renewed lease expired: the slot was given to another request")
	}
	h.Release()
	if _, err := other.Acquire(context.Background(), admission.Request{Layers: ly}); err != nil {
		t.Fatalf("after the release: %v", err)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// logs collects log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(f string, a ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(f, a...))
	l.mu.Unlock()
}

func (l *logs) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// TestRedisDegraded: with Redis unreachable (a closed port), a metered request (budget or
// prepaid credit) is refused with a 503 gateway_error naming the store, an unmetered one is
// admitted and held to this replica's own counters, and the outage is logged once per interval.
func TestRedisDegraded(t *testing.T) {
	lg := &logs{}
	r := openRedis(t, "redis://"+closedPort(t)+"/0", "sy:", admission.RedisOptions{Timeout: 50 * time.Millisecond, Logf: lg.logf, DegradedLog: time.Hour})
	ctx := context.Background()
	for _, req := range []admission.Request{
		{Layers: []admission.Layer{{Scope: admission.ScopeKey, ID: "k", Limits: admission.Limits{BudgetMicroUSD: 1000}}}, ReserveMicroUSD: 1},
		{CreditAccount: "acct", ReserveMicroUSD: 1},
	} {
		_, err := r.Acquire(ctx, req)
		fe := failure.From(err)
		if fe == nil || fe.Class != failure.GatewayError || fe.Class.Status() != 503 || !strings.Contains(fe.Msg, "admission store (redis)") {
			t.Fatalf("metered request: err = %v, want a 503 naming the admission store", err)
		}
	}
	rpm := []admission.Layer{{Scope: admission.ScopeKey, ID: "k", Limits: admission.Limits{RPM: 2}}}
	for i := range 2 {
		h, err := r.Acquire(ctx, admission.Request{Layers: rpm})
		if err != nil {
			t.Fatalf("unmetered request %d refused: %v", i, err)
		}
		h.Settle(0, 0)
	}
	_, err := r.Acquire(ctx, admission.Request{Layers: rpm})
	if fe := failure.From(err); fe == nil || fe.LimitKind != admission.KindRPM {
		t.Fatalf("third request: err = %v, want the local rpm refusal", err)
	}
	if n := lg.count("admission store (redis) not reachable"); n != 1 {
		t.Errorf("logged the outage %d times, want once per interval", n)
	}
}

// ownRedis returns the address of a Redis of the test's own (saving nothing) and a function
// that starts it; it skips the test when redis-server is not installed.
func ownRedis(t *testing.T) (string, func() *exec.Cmd) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed: this test needs a Redis of its own")
	}
	addr := closedPort(t)
	_, port, _ := net.SplitHostPort(addr)
	return addr, func() *exec.Cmd {
		cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		for range 100 {
			if c.Ping(context.Background()).Err() == nil {
				return cmd
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("redis-server did not start")
		return nil
	}
}

// TestRedisCreditDuringOutage: a credit the shared balance could not take (Redis paused) is
// not lost: once Redis answers, the balance's seed is dropped and the next prepaid request
// reseeds it from the store, which has the credit.
func TestRedisCreditDuringOutage(t *testing.T) {
	addr, start := ownRedis(t)
	cmd := start()
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	led := admissiontest.NewLedger()
	led.Credit("acct", 1000)
	r := openRedis(t, "redis://"+addr+"/0", "sy:", admission.RedisOptions{Seeder: led, Timeout: 100 * time.Millisecond})
	ctx := context.Background()
	req := admission.Request{CreditAccount: "acct", ReserveMicroUSD: 1000}
	h, err := r.Acquire(ctx, req) // seeds 1000
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "1000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	led.Credit("acct", 5000) // the store of accounts committed it
	if err := r.Credit(ctx, "acct", 5000); err == nil {
		t.Fatal("the credit reached a paused Redis")
	}
	if r.PendingEnds() != 1 {
		t.Fatalf("pending %d, want the missed credit", r.PendingEnds())
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	for deadline := time.Now().Add(10 * time.Second); r.PendingEnds() > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	time.Sleep(1100 * time.Millisecond) // past the second the store skips Redis after a failure
	h, err = r.Acquire(ctx, admission.Request{CreditAccount: "acct", ReserveMicroUSD: 6000})
	if err != nil {
		t.Fatalf("the credit was lost from the shared balance: %v", err)
	}
	h.Release()
	if bl, _ := r.Balance(ctx, "acct"); bl.BalanceMicroUSD != 6000 {
		t.Errorf("balance %+v, want 6000", bl)
	}
}

// TestRedisStopAndRestart: a Redis started by the test and stopped under the store: metered
// requests fail closed while it is down, unmetered ones open; once it is back (empty: it saved
// nothing) the counters are reseeded from the ledger and holds that ended during the outage
// are applied by Run's retry.
func TestRedisStopAndRestart(t *testing.T) {
	addr, start := ownRedis(t)
	cmd := start()
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()

	ck := admissiontest.NewClock()
	led := admissiontest.NewLedger()
	led.Credit("acct", 10_000)
	r := openRedis(t, "redis://"+addr+"/0", "sy:", admission.RedisOptions{Now: ck.Now, Seeder: led, Timeout: 200 * time.Millisecond})
	ctx := context.Background()
	ly := []admission.Layer{{Scope: admission.ScopeKey, ID: "k", Limits: admission.Limits{BudgetMicroUSD: 5000}}}
	req := admission.Request{Layers: ly, CreditAccount: "acct", ReserveMicroUSD: 1000}
	h, err := r.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	h.Settle(0, 1000)
	led.Settle(ck.Now(), ly, "acct", 1000)
	open, err := r.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}

	_ = cmd.Process.Kill()
	_, _ = cmd.Process.Wait()
	_, err = r.Acquire(ctx, req)
	if fe := failure.From(err); fe == nil || fe.Class != failure.GatewayError {
		t.Fatalf("metered request with Redis stopped: %v, want 503", err)
	}
	if _, err := r.Acquire(ctx, admission.Request{Layers: []admission.Layer{{Scope: admission.ScopeKey, ID: "u", Limits: admission.Limits{RPM: 10}}}}); err != nil {
		t.Fatalf("unmetered request with Redis stopped: %v", err)
	}
	open.Settle(0, 700) // fails now: queued for Run
	led.Settle(ck.Now(), ly, "acct", 700)

	cmd = start()
	time.Sleep(1100 * time.Millisecond) // the store skips Redis for a second after a failure
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	// Run's retry applies the queued end: its lease is gone with the data, so the spend and
	// balance seeds are dropped and the next Acquire reads the ledger, which has both settles.
	for deadline := time.Now().Add(10 * time.Second); r.PendingEnds() > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	if n := r.PendingEnds(); n != 0 {
		t.Fatalf("%d ends still pending after Redis came back", n)
	}
	// Run noticed the loss before its second heartbeat: it cannot know every replica of before
	// the loss, so the reseed waits RegistryStale (the rebuilding 503 meanwhile).
	var h2 admission.Hold
	for deadline := time.Now().Add(admission.RegistryStale + 5*time.Second); ; time.Sleep(100 * time.Millisecond) {
		if h2, err = r.Acquire(ctx, req); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if u, _ := r.Usage(ctx, ly[0]); u.SpentMicroUSD != 1700 || u.ReservedMicroUSD != 1000 {
		t.Errorf("after the restart: %+v, want 1700 spent (reseeded from the ledger) and 1000 reserved", u)
	}
	if bl, _ := r.Balance(ctx, "acct"); bl.BalanceMicroUSD != 8300 || bl.ReservedMicroUSD != 1000 {
		t.Errorf("balance after the restart: %+v, want 8300 and 1000 reserved", bl)
	}
	h2.Release()
}

// pauseLog records the pauses a replica applies.
type pauseLog struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (p *pauseLog) apply(provider string, until time.Time) {
	p.mu.Lock()
	if p.m == nil {
		p.m = make(map[string]time.Time)
	}
	p.m[provider] = until
	p.mu.Unlock()
}

func (p *pauseLog) get(provider string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.m[provider]
	return u, ok
}

// TestRedisSharedPauses: R-CIRCUIT-4 across replicas: a pause published by one replica reaches
// the others (pub/sub), a replica that starts later reads the pauses in force, and no replica
// hears its own pause back.
func TestRedisSharedPauses(t *testing.T) {
	url := redisURL(t)
	p := testPrefix(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	start := func() (*admission.Redis, *pauseLog) {
		r := openRedis(t, url, p, admission.RedisOptions{})
		l := &pauseLog{}
		wg.Go(func() { _ = r.SharePauses(ctx, l.apply) })
		return r, l
	}
	a, la := start()
	_, lb := start()
	wait := func(l *pauseLog, provider string) time.Time {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if u, ok := l.get(provider); ok {
				return u
			}
		}
		t.Fatalf("the pause of %s never arrived", provider)
		return time.Time{}
	}
	until := time.Now().Add(30 * time.Second).Truncate(time.Millisecond)
	a.PublishPause("openai", until)
	if got := wait(lb, "openai"); !got.Equal(until) {
		t.Errorf("replica b paused openai until %v, want %v", got, until)
	}
	// b is subscribed now: the next pause arrives by pub/sub.
	a.PublishPause("anthropic", until.Add(time.Second))
	wait(lb, "anthropic")
	_, lc := start() // a replica started after the pauses: reads those in force
	wait(lc, "openai")
	wait(lc, "anthropic")
	a.PublishPause("past", time.Now().Add(-time.Second))
	a.PublishPause("marker", until)
	wait(lb, "marker")
	if _, ok := lb.get("past"); ok {
		t.Error("a pause already over was shared")
	}
	if _, ok := la.get("anthropic"); ok {
		t.Error("replica a heard its own pause back")
	}
}
