package admission_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/admission/admissiontest"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// pauseRedis makes the Redis at addr answer nothing for d (CLIENT PAUSE ALL).
func pauseRedis(t *testing.T, addr string, d time.Duration) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 20 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestRedisLeaseLostWhileRenewalsFail is issue 24's repro of a long stream whose lease renewals
// fail for 40 s (an injected clock: no real wait): budget 1000 in total, a request reserving
// 600 is running on replica 1 when Redis stops answering its renewals. The renewal that fails
// does not put the replica in degraded mode; past the lease, replica 2's Acquire purges the
// lease and admits 600 against the same money (the bound of an outage longer than the lease),
// and then:
//   - the renewal, retried by Run within a second once Redis answers, puts the lease back, so
//     a further 300 is refused (today: admitted);
//   - the running request's settle, without its lease at first, charges its 600 and deletes no
//     counter (today: the settle deletes the spend, the reseed misses the settle still queued
//     in the ledger writer, and the counter shows 600 against 1200 in the ledger).
func TestRedisLeaseLostWhileRenewalsFail(t *testing.T) {
	addr, start := ownRedis(t)
	cmd := start()
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	url := "redis://" + addr + "/0"
	ck := admissiontest.NewClock()
	led := admissiontest.NewLedger() // only what the ledger writers have flushed
	// Replica 1's timeout is shorter than the pause below, so its renewal fails then.
	o := admission.RedisOptions{Now: ck.Now, Seeder: led, Timeout: 300 * time.Millisecond, LeaseTTL: 30 * time.Second}
	r1 := openRedis(t, url, "sy:", o)
	o.Timeout = 0 // the tests' default
	r2 := openRedis(t, url, "sy:", o)
	ctx := context.Background()
	ly := []admission.Layer{{Scope: admission.ScopeKey, ID: "k", Limits: admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodTotal}}}
	req := func(reserve int64) admission.Request { return admission.Request{Layers: ly, ReserveMicroUSD: reserve} }

	stream, err := r1.Acquire(ctx, req(600))
	if err != nil {
		t.Fatal(err)
	}
	pauseRedis(t, addr, 600*time.Millisecond)
	if st := r1.RenewLeases(ctx); st.Failed != 1 {
		t.Fatalf("renewal during the pause: %+v, want it failed", st)
	}
	if r1.Degraded() {
		t.Fatal("one failed renewal put the replica in degraded mode")
	}
	time.Sleep(650 * time.Millisecond) // the pause ends
	other := []admission.Layer{{Scope: admission.ScopeKey, ID: "other", Limits: admission.Limits{BudgetMicroUSD: 1000}}}
	var h admission.Hold
	for range 3 { // within the second a failed call used to mark Redis down; a loaded machine may time out once
		if h, err = r1.Acquire(ctx, admission.Request{Layers: other, ReserveMicroUSD: 1}); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("a metered request after a failed renewal: %v (a failed renewal marked Redis down)", err)
	}
	h.Release()

	ck.Advance(40 * time.Second) // renewals kept failing: the lease is past its expiry
	b, err := r2.Acquire(ctx, req(600))
	if err != nil {
		t.Fatalf("replica 2 after the lease expired: %v", err)
	}
	// Redis answers again: Run retries the failed renewal within a second and puts it back.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r1.Run(rctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the renewal to put the lease back", func() bool {
		u, err := r2.Usage(ctx, ly[0])
		return err == nil && u.ReservedMicroUSD == 1200 && u.InFlight == 2
	})
	if _, err := r2.Acquire(ctx, req(300)); failure.From(err) == nil || failure.From(err).LimitKind != admission.KindBudget {
		t.Fatalf("a further 300 with 1200 reserved against 1000: err = %v, want the budget refusal", err)
	}

	stream.Settle(0, 600) // the ledger writer has not flushed it yet
	if u, _ := r2.Usage(ctx, ly[0]); u.SpentMicroUSD != 600 || u.ReservedMicroUSD != 600 {
		t.Fatalf("after the stream's settle: %+v, want 600 spent and 600 reserved", u)
	}
	led.Settle(ck.Now(), ly, "", 600) // flushed later
	b.Settle(0, 600)
	led.Settle(ck.Now(), ly, "", 600)
	spent, _ := led.SpentMicroUSD(ctx, admission.ScopeKey, "k", time.Time{}, nil)
	if u, _ := r2.Usage(ctx, ly[0]); u.SpentMicroUSD != spent || u.ReservedMicroUSD != 0 {
		t.Fatalf("counter %+v, ledger %d: want the counter equal to the ledger", u, spent)
	}
	if _, err := r1.Acquire(ctx, req(300)); failure.From(err) == nil || failure.From(err).LimitKind != admission.KindBudget {
		t.Fatalf("a further 300 after 1200 spent of 1000: err = %v, want the budget refusal", err)
	}
}

// TestRedisRenewsManyHolds: 6,000 live holds of one replica (each on a key, its workspace and
// its account, and a prepaid account) are renewed in chunks sized to the timeout, every chunk
// within the production timeout of 100 ms and the whole renewal well within a third of the
// lease; and when their leases are gone (deleted here) the renewal puts every one back.
func TestRedisRenewsManyHolds(t *testing.T) {
	url := redisURL(t)
	p := testPrefix(t, url)
	ck := admissiontest.NewClock()
	led := admissiontest.NewLedger()
	const holds, keys = 6000, 60
	for i := range keys {
		led.Credit(fmt.Sprint("acct", i%6), 1e9)
	}
	o := admission.RedisOptions{Now: ck.Now, Seeder: led, Timeout: 100 * time.Millisecond, LeaseTTL: 30 * time.Second, Prefix: p}
	r, err := admission.OpenRedis(url, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	lim := admission.Limits{Concurrency: 1000, BudgetMicroUSD: 1e12}
	layersOf := func(i int) []admission.Layer {
		return []admission.Layer{
			{Scope: admission.ScopeKey, ID: fmt.Sprint("k", i%keys), Limits: lim},
			{Scope: admission.ScopeWorkspace, ID: fmt.Sprint("w", i%12), Limits: lim},
			{Scope: admission.ScopeAccount, ID: fmt.Sprint("acct", i%6), Limits: admission.Limits{BudgetMicroUSD: 1e12}},
		}
	}
	hs := make([]admission.Hold, 0, holds)
	for i := range holds {
		var h admission.Hold
		var err error
		for try := 0; try < 5; try++ { // a loaded machine can pass the 100 ms timeout now and then
			if h, err = r.Acquire(ctx, admission.Request{Layers: layersOf(i), CreditAccount: fmt.Sprint("acct", i%6), ReserveMicroUSD: 1}); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
		hs = append(hs, h)
	}
	defer func() {
		for _, h := range hs {
			h.Release()
		}
	}()
	// The leases are gone (as after renewals failed past the lease, or a flush of them).
	admin := redis.NewClient(mustParse(t, url))
	defer admin.Close()
	iter := admin.Scan(ctx, 0, p+"*", 1000).Iterator()
	gone := 0
	for iter.Next(ctx) {
		if k := iter.Val(); len(k) > 3 && (k[len(k)-2:] == ":l" || k[len(k)-3:] == ":lr") {
			admin.Del(ctx, k)
			gone++
		}
	}
	if gone == 0 {
		t.Fatal("no lease keys found")
	}
	ck.Advance(10 * time.Second)
	var st admission.RenewStats
	var took time.Duration
	for range 2 { // the first renewal also sizes the chunks
		t0 := time.Now()
		st = r.RenewLeases(ctx)
		took = time.Since(t0)
		t.Logf("renewal of %d holds: %v in %d chunks (slowest %v, next chunk %d holds), %d leases put back, %d failed",
			holds, took, st.Chunks, st.Slowest, st.ChunkSize, st.PutBack, st.Failed)
		if st.Failed != 0 || st.Holds != holds {
			t.Fatalf("renewal: %+v, want all %d holds renewed", st, holds)
		}
		if st.PutBack > 0 && st.PutBack != holds*4 {
			t.Errorf("leases put back: %d, want %d (3 layers and a prepaid account per hold)", st.PutBack, holds*4)
		}
	}
	if third := o.LeaseTTL / 3; took > third/4 {
		t.Errorf("renewing %d holds took %v, want well within a third of the lease (%v)", holds, took, third)
	}
	u, err := r.Usage(ctx, layersOf(0)[2])
	if err != nil {
		t.Fatal(err)
	}
	if u.InFlight != holds/6 || u.ReservedMicroUSD != holds/6 {
		t.Errorf("account usage after the renewal %+v, want %d in flight and reserved", u, holds/6)
	}
	if bl, _ := r.Balance(ctx, "acct0"); bl.ReservedMicroUSD != holds/6 {
		t.Errorf("prepaid reserve after the renewal %+v, want %d", bl, holds/6)
	}
	ck.Advance(25 * time.Second) // 35 s after the holds were taken: only renewed leases live
	if u, _ := r.Usage(ctx, layersOf(0)[0]); u.InFlight != holds/keys {
		t.Errorf("key usage 35 s after admission: %+v, want its %d holds still leased", u, holds/keys)
	}
}

func mustParse(t *testing.T, url string) *redis.Options {
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
