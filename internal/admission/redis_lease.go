package admission

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Leases, their renewal and their repair (docs/limits.md "Many replicas", "Exactness").
//
// Every live hold of a replica is renewed every LeaseTTL/3, in chunks whose size adapts so
// that one chunk's script runs within a fraction of the timeout; a renewal puts back a lease
// that is gone (it expired while renewals failed and an Acquire purged it, or Redis lost its
// data), so a running request never loses its reservation for good. A failed renewal is
// retried every second (Run) and never counts toward the degraded mode.
//
// Redis losing its data is noticed through the data epoch, a key every replica registers its
// holds under: the acquire script refuses to admit on a replica whose epoch is not the one in
// force, and every replica checks it at its heartbeat (each second). A replica that notices
// creates the new epoch (or reads the one another created), re-registers all its live holds
// (their leases and reserves), and only then joins the registry of live replicas under the new
// epoch. A counter's reseed after a loss waits until every replica that was live before it has
// joined (or RegistryStale has passed), so the reseeded budgets and balances are checked
// against every reserve in flight.
const (
	// RegistryStale is how long a replica stays in the registry without a heartbeat (one each
	// second), and the longest a reseed waits for the replicas of before a loss.
	RegistryStale = 5 * time.Second
	// renewChunkStart, renewChunkMin and renewChunkMax bound the holds of one renewal chunk;
	// it doubles while chunks take under Timeout/20 and halves past Timeout/5 or on a failure,
	// so that a chunk's script (which holds Redis while it runs) stays near a tenth of the
	// timeout.
	renewChunkStart = 64
	renewChunkMin   = 8
	renewChunkMax   = 2048
	// LossFlushTimeout bounds a replica's wait for its ledger writer (RedisOptions.Flush) when
	// Redis lost its data, before it re-registers.
	LossFlushTimeout = 2 * time.Second
)

// tombKeep is how long a replica keeps the tombstone of a hold it ended (the end of a retry
// after a lost answer finds it): a minute, or two lease TTLs when longer.
func tombKeep(leaseTTL time.Duration) time.Duration { return max(time.Minute, 2*leaseTTL) }

// errRedisDegraded is the cause of the refusals of the degraded mode.
var errRedisDegraded = errors.New("admission: redis not reachable (degraded mode)")

// RenewStats are the figures of one renewal.
type RenewStats struct {
	// Holds is the live holds whose leases were renewed; Failed those whose chunk failed (Run
	// retries them within a second).
	Holds, Failed int
	// PutBack is the leases (a layer's or a prepaid account's) that were gone and put back.
	PutBack int
	// Chunks is the script calls made, Slowest the longest of them, ChunkSize the size the
	// next renewal starts at.
	Chunks    int
	Slowest   time.Duration
	ChunkSize int
}

// Run renews the leases of this replica's live holds every LeaseTTL/3 (a failed renewal again
// every second until it succeeds), sends its heartbeat and retries the ends that failed every
// second, and probes Redis every HealthProbeEvery while degraded, until ctx is done; then it
// makes a last attempt at the failed ends and returns nil.
func (r *Redis) Run(ctx context.Context) error {
	renew := time.NewTicker(r.o.LeaseTTL / 3)
	defer renew.Stop()
	tick := time.NewTicker(redisRetryInterval)
	defer tick.Stop()
	probe := time.NewTicker(HealthProbeEvery)
	defer probe.Stop()
	r.running.Store(true)
	defer r.running.Store(false)
	r.heartbeat(ctx)
	for {
		select {
		case <-ctx.Done():
			r.retryEnds(context.WithoutCancel(ctx))
			return nil
		case <-r.regKick:
			r.heartbeat(ctx)
		case <-renew.C:
			r.RenewLeases(ctx)
		case <-tick.C:
			r.heartbeat(ctx)
			if r.renewDue.Load() {
				r.RenewLeases(ctx)
			}
			r.retryEnds(ctx)
		case <-probe.C:
			if r.Degraded() {
				r.probe(ctx)
			}
		}
	}
}

// RenewLeases extends the leases of this replica's live holds to now+LeaseTTL, putting back
// those that are gone, in chunks sized to the timeout; Run calls it every LeaseTTL/3, and again
// every second after one failed. A failure does not count toward the degraded mode.
func (r *Redis) RenewLeases(ctx context.Context) RenewStats {
	r.mu.Lock()
	hs := make([]*redisHold, 0, len(r.live))
	for h := range r.live {
		hs = append(hs, h)
	}
	r.mu.Unlock()
	st := r.renew(ctx, hs)
	r.renewDue.Store(st.Failed > 0)
	if st.Failed > 0 {
		r.logBackground("renewing leases", fmt.Errorf("%d of %d live holds not renewed", st.Failed, len(hs)))
	}
	return st
}

// renew renews the leases of hs chunk by chunk.
func (r *Redis) renew(ctx context.Context, hs []*redisHold) RenewStats {
	size := int(r.chunk.Load())
	st := RenewStats{}
	failures := 0
	for i := 0; i < len(hs); {
		n := min(size, len(hs)-i)
		t0 := time.Now()
		back, err := r.renewChunk(ctx, hs[i:i+n])
		d := time.Since(t0)
		st.Chunks++
		st.Slowest = max(st.Slowest, d)
		if err != nil {
			failures++
			size = max(size/2, renewChunkMin)
			if failures < 2 && ctx.Err() == nil {
				continue // once more, smaller
			}
			st.Failed += len(hs) - i
			break
		}
		failures = 0
		st.Holds += n
		st.PutBack += back
		i += n
		switch {
		case d < r.o.Timeout/20 && n == size:
			size = min(size*2, renewChunkMax)
		case d > r.o.Timeout/5:
			size = max(size/2, renewChunkMin)
		}
	}
	r.chunk.Store(int64(size))
	st.ChunkSize = size
	return st
}

// renewChunk runs the renew script over hs (one call within the timeout).
func (r *Redis) renewChunk(ctx context.Context, hs []*redisHold) (int, error) {
	now := r.o.Now()
	keys := make([]string, 1, 16)
	keys[0] = r.tombKey
	idx := make(map[string]int, 16)
	at := func(k string) int {
		i, ok := idx[k]
		if !ok {
			keys = append(keys, k)
			i = len(keys) // Lua's KEYS start at 1
			idx[k] = i
		}
		return i
	}
	args := make([]any, 2, 2+5*len(hs))
	args[0], args[1] = now.Add(r.o.LeaseTTL).UnixMilli(), (2 * r.o.LeaseTTL).Milliseconds()
	for _, h := range hs {
		pairs := h.n
		if h.credit != "" {
			pairs++
		}
		args = append(args, h.id, h.reserve, pairs)
		for i := range h.n {
			args = append(args, at(h.keys[i*redisScriptKeysLayer+2]), at(h.keys[i*redisScriptKeysLayer+3]))
		}
		if h.credit != "" { // the prepaid account's leases follow the layers' keys
			args = append(args, at(h.keys[h.n*redisScriptKeysLayer]), at(h.keys[h.n*redisScriptKeysLayer+1]))
		}
	}
	res, err := r.run(ctx, renewScript, keys, args...)
	if err != nil {
		return 0, err
	}
	n, _ := res.(int64)
	return int(n), nil
}

// epochKey names the data epoch, registryKey the registry of live replicas.
func (r *Redis) epochKey() string    { return r.o.Prefix + "epoch" }
func (r *Redis) registryKey() string { return r.o.Prefix + "replicas" }

// heartbeat registers this replica as live under the epoch in force, and reads how many replicas
// are live; when the epoch is not the one its holds are registered under, it re-registers them
// first. Failures are background failures (they are retried at the next heartbeat).
func (r *Redis) heartbeat(ctx context.Context) {
	joined, err := r.join(ctx, r.epochNow())
	if err == nil && !joined {
		err = r.reregister(ctx)
	}
	if err != nil && ctx.Err() == nil {
		r.logBackground("heartbeat", err)
	}
}

// join runs the heartbeat script under epoch: it reports false when epoch is not in force.
func (r *Redis) join(ctx context.Context, epoch string) (bool, error) {
	res, err := r.run(ctx, heartbeatScript, []string{r.epochKey(), r.registryKey()},
		time.Now().UnixMilli(), r.replica, epoch, RegistryStale.Milliseconds())
	if err != nil {
		return false, err
	}
	v, _ := res.([]any)
	if len(v) < 2 {
		return false, nil
	}
	ms, _ := v[1].([]any)
	members := make([]string, 0, len(ms))
	for _, m := range ms {
		if s, ok := m.(string); ok {
			members = append(members, s)
		}
	}
	r.mu.Lock()
	r.members = members
	r.mu.Unlock()
	r.replicas.Store(int64(max(len(members), 1)))
	r.joins.Add(1)
	return true, nil
}

// kickRegister asks Run to re-register at once (Redis lost its data).
func (r *Redis) kickRegister() {
	select {
	case r.regKick <- struct{}{}:
	default:
	}
}

// epochNow is the data epoch this replica's holds are registered under ("" none yet).
func (r *Redis) epochNow() string {
	if p := r.epoch.Load(); p != nil {
		return *p
	}
	return ""
}

// errEpochMoved: Redis lost its data again while this replica re-registered its holds.
var errEpochMoved = errors.New("admission: the redis data epoch changed during the re-registration")

// reregister brings this replica under the data epoch in force (creating it when Redis has
// none): it puts back the leases of all its live holds, then joins the registry. When it
// replaces an earlier epoch (Redis lost its data), it first makes its ledger writer's queued
// settles durable (RedisOptions.Flush, within LossFlushTimeout: the settles it charged to the
// lost counters are then in the ledger when it joins), and the reseeds of this replica wait for
// the replicas that were live before the loss (seedGate): all of them when its view of the
// registry is older than two heartbeats, else, as it may miss a replica that started with it,
// RegistryStale. One re-registration runs at a time.
func (r *Redis) reregister(ctx context.Context) error {
	r.regMu.Lock()
	defer r.regMu.Unlock()
	var b [8]byte
	_, _ = rand.Read(b[:])
	res, err := r.run(ctx, epochScript, []string{r.epochKey()}, strconv.FormatInt(time.Now().UnixMilli(), 36)+"."+hex.EncodeToString(b[:]))
	if err != nil {
		return err
	}
	cur, _ := res.(string)
	prev := r.epochNow()
	if cur == prev {
		return nil // another goroutine did it
	}
	// Its view of the registry comes from the heartbeats of Run; before the second one it may
	// miss replicas that started with it.
	young := r.running.Load() && r.joins.Load() < 2
	if prev != "" && r.o.Flush != nil {
		fctx, cancel := context.WithTimeout(ctx, LossFlushTimeout)
		err := r.o.Flush(fctx)
		cancel()
		if err != nil {
			r.o.Logf("admission store (redis) lost its data: the ledger writer's queued settles were not written within %v (%v): a reseed may miss them", LossFlushTimeout, err)
		}
	}
	r.mu.Lock()
	r.gen.Add(1)
	hs := make([]*redisHold, 0, len(r.live))
	for h := range r.live {
		hs = append(hs, h)
	}
	before := r.members
	r.mu.Unlock()
	if st := r.renew(ctx, hs); st.Failed > 0 {
		return fmt.Errorf("admission: re-registering %d live holds after redis lost its data: %d failed", len(hs), st.Failed)
	}
	joined, err := r.join(ctx, cur)
	if err != nil {
		return err
	}
	if !joined {
		return errEpochMoved
	}
	r.epoch.Store(&cur)
	if prev != "" {
		wait := make([]string, 0, len(before)+1)
		for _, m := range before {
			if m != r.replica {
				wait = append(wait, m)
			}
		}
		others := fmt.Sprintf("the %d other replicas", len(wait))
		if young {
			wait = append(wait, "") // never registered: the gate waits RegistryStale
			others = "the other replicas (this one started too recently to know them all)"
		}
		r.mu.Lock()
		r.gateSince, r.gateWait = time.Now(), wait
		r.mu.Unlock()
		r.o.Logf("admission store (redis) lost its data: re-registered %d requests in flight; counters are reseeded from the ledger once %s have re-registered theirs (at most %v)",
			len(hs), others, RegistryStale)
	}
	return nil
}

// seedGate holds a reseed after Redis lost its data until every replica that was live before
// the loss has re-registered its holds, or RegistryStale has passed: nil when the seed may be
// read, else the 503 of a store being rebuilt.
func (r *Redis) seedGate(ctx context.Context) error {
	r.mu.Lock()
	wait, since := r.gateWait, r.gateSince
	r.mu.Unlock()
	if len(wait) == 0 {
		return nil
	}
	if time.Since(since) < RegistryStale {
		cctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
		ms, err := r.rdb.ZRange(cctx, r.registryKey(), 0, -1).Result()
		cancel()
		if err != nil {
			return r.unreachable(ctx, err)
		}
		in := make(map[string]bool, len(ms))
		for _, m := range ms {
			in[m] = true
		}
		for _, w := range wait {
			if !in[w] {
				return rebuilding(errors.New("admission: waiting for replica " + w + " to re-register"))
			}
		}
	}
	r.mu.Lock()
	r.gateWait = nil
	r.mu.Unlock()
	return nil
}

// rebuilding is the 503 of a metered request while the counters are rebuilt after Redis lost
// its data.
func rebuilding(cause error) error {
	return failure.Wrap(failure.GatewayError,
		"the admission store (redis) lost its data: budgets and balances are rebuilt once every replica has re-registered its requests in flight (a few seconds); retry shortly",
		cause)
}

// unreachable is the answer of a request-path call that failed: cancelled when ctx is done,
// else the failure is recorded and the 503 of an unreachable store returned.
func (r *Redis) unreachable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return failure.Wrap(failure.Cancelled, "the request was cancelled", ctx.Err())
	}
	var re redis.Error
	if errors.As(err, &re) {
		return failure.Wrap(failure.GatewayError, "the admission store (redis) answered with an error", err)
	}
	r.fail(err)
	return failure.Wrap(failure.GatewayError, "the admission store (redis) is not reachable: requests with a budget or prepaid credit are refused until it answers; retry shortly", err)
}

// logBackground logs a failed background call (renewal, heartbeat, retried end) at most once per
// DegradedLog; it does not count toward the degraded mode.
func (r *Redis) logBackground(what string, err error) {
	now := time.Now().UnixNano()
	last := r.lastBgLog.Load()
	if now-last >= int64(r.o.DegradedLog) && r.lastBgLog.CompareAndSwap(last, now) {
		r.o.Logf("admission store (redis): %s failed, retried: %v", what, err)
	}
}

// liveOn returns how many of this replica's live holds have a lease on leaseKey (a layer with a
// concurrency limit).
func (r *Redis) liveOn(leaseKey string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(r.liveConc[leaseKey])
}
