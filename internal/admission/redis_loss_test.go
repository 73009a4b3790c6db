package admission_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/admission/admissiontest"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestRedisLossFlushesTheLedgerFirst: when Redis lost its data, a replica makes its ledger
// writer's queued settles durable (RedisOptions.Flush) before it re-registers and rejoins the
// registry, so that a reseed (which waits for every replica of before the loss to rejoin) reads
// them from the ledger (docs/limits.md "Exactness"); nothing is flushed at start. That write is
// made by Run, never in a request: while it runs a metered request is refused with the 503 of a
// store being rebuilt, at once, and an unmetered one is admitted on the replica's share.
func TestRedisLossFlushesTheLedgerFirst(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix(t, url)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(opt)
	defer admin.Close()
	members := func() int64 { n, _ := admin.ZCard(context.Background(), prefix+"replicas").Result(); return n }

	var flushes, seenByFlush atomic.Int64
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock()
	r := openRedis(t, url, prefix, admission.RedisOptions{Seeder: admissiontest.NewLedger(), Flush: func(ctx context.Context) error {
		flushes.Add(1)
		seenByFlush.Store(members())
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the first heartbeat", func() bool { return members() == 1 })
	metered := admission.Request{Layers: []admission.Layer{{Scope: admission.ScopeKey, ID: "k",
		Limits: admission.Limits{BudgetMicroUSD: 1000, BudgetPeriod: admission.PeriodTotal}}}, ReserveMicroUSD: 100, RequestID: "r1"}
	h, err := r.Acquire(context.Background(), metered)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if flushes.Load() != 0 {
		t.Fatalf("the ledger was flushed %d times at start, want none", flushes.Load())
	}

	var slowest time.Duration
	timed := func() error {
		t0 := time.Now()
		_, err := r.Acquire(context.Background(), metered)
		slowest = max(slowest, time.Since(t0))
		return err
	}
	flushPrefix(t, url, prefix) // Redis loses its data
	waitFor(t, "the replica to notice the loss and flush its ledger", func() bool {
		return timed() != nil && flushes.Load() == 1
	})
	err = timed()
	if fe := failure.From(err); fe == nil || fe.Class != failure.GatewayError {
		t.Fatalf("a metered request while the ledger is flushed: %v, want the 503 of a store being rebuilt", err)
	}
	if slowest > time.Second {
		t.Errorf("a metered request waited %v for the ledger's flush", slowest)
	}
	hu, err := r.Acquire(context.Background(), admission.Request{Layers: []admission.Layer{{Scope: admission.ScopeKey, ID: "u",
		Limits: admission.Limits{RPM: 100}}}})
	if err != nil {
		t.Fatalf("an unmetered request while the ledger is flushed: %v, want it admitted on the share", err)
	}
	hu.Release()
	if n := seenByFlush.Load(); n != 0 {
		t.Errorf("the replica was in the registry (%d members) when it flushed its ledger: it must rejoin after", n)
	}
	unblock()
	waitFor(t, "the replica to rejoin", func() bool { return members() == 1 })
	waitFor(t, "a metered request to be admitted again", func() bool {
		h, err := r.Acquire(context.Background(), metered)
		if err == nil {
			h.Release()
		}
		return err == nil
	})
	if flushes.Load() != 1 {
		t.Errorf("the ledger was flushed %d times for one loss, want 1", flushes.Load())
	}
}
