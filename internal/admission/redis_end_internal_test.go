package admission

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"
)

// endTestStore opens a Redis store on SWITCHYARD_TEST_REDIS_URL under a fresh prefix (deleted
// at the end), or skips.
func endTestStore(t *testing.T, now func() time.Time, seeder Seeder) *Redis {
	url := os.Getenv("SWITCHYARD_TEST_REDIS_URL")
	if url == "" {
		t.Skip("SWITCHYARD_TEST_REDIS_URL is not set")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := "sytest:" + hex.EncodeToString(b[:]) + ":"
	r, err := OpenRedis(url, RedisOptions{Now: now, Seeder: seeder, Prefix: p, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		iter := r.rdb.Scan(ctx, 0, p+"*", 1000).Iterator()
		for iter.Next(ctx) {
			r.rdb.Del(ctx, iter.Val())
		}
		_ = r.Close()
	})
	return r
}

type constSeeder struct{ spent, balance int64 }

func (s constSeeder) SpentMicroUSD(context.Context, Scope, string, time.Time, []string) (int64, error) {
	return s.spent, nil
}
func (s constSeeder) BalanceMicroUSD(context.Context, string, []string) (int64, error) {
	return s.balance, nil
}

// TestRedisEndWithoutLease: a settle whose lease is gone (expired and purged while renewals
// failed) still charges its cost to the budget and the prepaid balance, and never deletes a
// counter; an end run again (its first answer was lost, Run retries it) changes nothing; a
// release without its lease returns nothing it no longer holds.
func TestRedisEndWithoutLease(t *testing.T) {
	now := time.Date(2026, 11, 10, 12, 0, 0, 0, time.UTC)
	r := endTestStore(t, func() time.Time { return now }, constSeeder{spent: 100, balance: 10_000})
	ctx := context.Background()
	ly := []Layer{{Scope: ScopeKey, ID: "k", Limits: Limits{Concurrency: 5, BudgetMicroUSD: 5000}}}
	req := Request{Layers: ly, CreditAccount: "acct", ReserveMicroUSD: 1000}
	settled, err := r.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	released, err := r.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// Both leases are gone, as after an Acquire purged them (their reserves with them).
	base, cb := r.layerBase(ScopeKey, "k"), r.creditBase("acct")
	if err := r.rdb.Del(ctx, base+":l", base+":lr", cb+":l", cb+":lr").Err(); err != nil {
		t.Fatal(err)
	}
	settled.Settle(0, 700)
	released.Release()
	check := func(when string) {
		t.Helper()
		u, err := r.Usage(ctx, ly[0])
		if err != nil {
			t.Fatal(err)
		}
		if u.SpentMicroUSD != 800 || u.ReservedMicroUSD != 0 || u.InFlight != 0 {
			t.Errorf("%s: usage %+v, want 800 spent (seed 100 + the settle), nothing reserved", when, u)
		}
		bl, _ := r.Balance(ctx, "acct")
		if !bl.Seeded || bl.BalanceMicroUSD != 9300 || bl.ReservedMicroUSD != 0 {
			t.Errorf("%s: balance %+v, want 9300 seeded and nothing reserved", when, bl)
		}
		for _, k := range []string{spendKey(base, PeriodMonth, now), cb + ":bal"} {
			if n, _ := r.rdb.Exists(ctx, k).Result(); n != 1 {
				t.Errorf("%s: counter %s was deleted", when, k)
			}
		}
	}
	check("after the ends")
	// Run retries an end whose answer was lost: the end script runs again.
	for _, h := range []*redisHold{settled.(*redisHold), released.(*redisHold)} {
		if err := h.end(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check("after the ends ran again")
	// A renewal racing an end does not put an ended hold's lease back.
	r.mu.Lock()
	r.live[settled.(*redisHold)] = struct{}{}
	r.mu.Unlock()
	if st := r.RenewLeases(ctx); st.PutBack != 0 {
		t.Errorf("the renewal put back %d leases of an ended hold", st.PutBack)
	}
	check("after a renewal of the ended hold")
}
