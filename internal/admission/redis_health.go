package admission

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// The degraded mode's switch (docs/limits.md "Degraded mode"). One slow or failed call is not
// an outage: the store enters the degraded mode when, over the last HealthWindow, at least
// HealthMinFailures calls on the request path failed and they are at least HealthFailureRatio
// of the calls; it leaves it after HealthLeaveAfter probes in a row succeeded, one at most
// every HealthProbeEvery (a hysteresis of at least HealthProbeEvery x (HealthLeaveAfter-1)).
// Renewals, retried ends and pauses are background calls: they never count.
const (
	HealthWindow       = 10 * time.Second
	HealthMinFailures  = 5
	HealthFailureRatio = 0.5
	HealthProbeEvery   = 250 * time.Millisecond
	HealthLeaveAfter   = 3
	healthBuckets      = 10 // one per second of HealthWindow
)

// health counts the outcomes of the request path's calls to Redis in one-second buckets.
type health struct {
	degraded  atomic.Bool
	lastProbe atomic.Int64 // Unix ns of the last call let through while degraded

	mu      sync.Mutex
	buckets [healthBuckets]struct {
		sec       int64
		ok, fails int64
	}
	streak int // successful probes in a row while degraded
}

// record counts one call's outcome at now and reports whether the store entered (+1) or left
// (-1) the degraded mode with it.
func (h *health) record(now time.Time, ok bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.degraded.Load() {
		if !ok {
			h.streak = 0
			return 0
		}
		if h.streak++; h.streak < HealthLeaveAfter {
			return 0
		}
		h.streak = 0
		clear(h.buckets[:])
		h.degraded.Store(false)
		return -1
	}
	sec := now.Unix()
	b := &h.buckets[sec%healthBuckets]
	if b.sec != sec {
		b.sec, b.ok, b.fails = sec, 0, 0
	}
	if ok {
		b.ok++
		return 0
	}
	b.fails++
	var calls, fails int64
	for i := range h.buckets {
		if x := &h.buckets[i]; sec-x.sec < healthBuckets {
			calls += x.ok + x.fails
			fails += x.fails
		}
	}
	if fails < HealthMinFailures || float64(fails) < HealthFailureRatio*float64(calls) {
		return 0
	}
	h.streak = 0
	h.lastProbe.Store(now.UnixNano())
	h.degraded.Store(true)
	return 1
}

// allow reports whether a request-path call may go to Redis at now: always outside the degraded
// mode; in it, one call per HealthProbeEvery (the probe whose outcome may end it).
func (h *health) allow(now time.Time) bool {
	if !h.degraded.Load() {
		return true
	}
	last := h.lastProbe.Load()
	return now.UnixNano()-last >= int64(HealthProbeEvery) && h.lastProbe.CompareAndSwap(last, now.UnixNano())
}

// Degraded reports whether the store is in the degraded mode (docs/limits.md): Redis is not
// asked on the request path except by one probe per HealthProbeEvery.
func (r *Redis) Degraded() bool { return r.health.degraded.Load() }

// ok records a request-path call that Redis answered.
func (r *Redis) ok() {
	if r.health.record(time.Now(), true) < 0 {
		r.o.Logf("admission store (redis) reachable again: leaving the degraded mode")
	}
}

// fail records a request-path call that failed, and logs it at most once per DegradedLog: the
// degraded mode, or (outside it) a call whose request was answered without Redis.
func (r *Redis) fail(err error) {
	now := time.Now()
	r.health.record(now, false)
	last := r.lastLog.Load()
	if now.UnixNano()-last < int64(r.o.DegradedLog) || !r.lastLog.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	if r.Degraded() {
		r.o.Logf("admission store (redis) not reachable: degraded mode: metered requests are refused with 503, unmetered ones admitted on this replica's share of each limit (1/%d): %v",
			r.Replicas(), err)
		return
	}
	r.o.Logf("admission store (redis) not reachable within its timeout: that request was refused with 503 if metered, else admitted on this replica's share of its limits (1/%d); not degraded (that takes half of the calls over %v failing): %v",
		r.Replicas(), HealthWindow, err)
}

// probe pings Redis while the store is degraded (Run, every HealthProbeEvery), so that it
// leaves the degraded mode without waiting for traffic.
func (r *Redis) probe(ctx context.Context) {
	if !r.health.allow(time.Now()) {
		return
	}
	if err := r.Ping(ctx); err != nil {
		r.fail(err)
		return
	}
	r.ok()
}

// Replicas returns the live replicas this one knows of (the registry read at its last
// heartbeat, itself included; 1 before the first): the divisor of the degraded mode's share.
func (r *Redis) Replicas() int64 { return max(r.replicas.Load(), 1) }

// share is a limit's share on one of n replicas: limit / n rounded down (0: none), 0 for no
// limit.
func share(limit, n int64) int64 {
	if limit <= 0 {
		return 0
	}
	return limit / n
}

// degraded answers a request that Redis cannot: a 503 naming the store for a metered request
// (no money is spent unchecked); for the others this replica's own counters, each rpm, tpm and
// concurrency limit cut to the replica's share (the limit divided by the live replicas it knows
// of, rounded down), its concurrency share less the requests of the layer it already holds in
// Redis. A limit whose share is 0 (fewer than one per replica) refuses with the 503 too. So the
// replicas together admit at most each limit, as long as they agree on how many they are
// (docs/limits.md "Degraded mode").
func (r *Redis) degraded(ctx context.Context, req *Request, err error) (Hold, error) {
	if req.Metered() {
		return nil, failure.Wrap(failure.GatewayError,
			"the admission store (redis) is not reachable: requests with a budget or prepaid credit are refused until it answers; retry shortly", err)
	}
	n := r.Replicas()
	ls := make([]Layer, 0, len(req.Layers))
	for _, l := range req.Layers {
		if l.Limits.IsZero() {
			continue
		}
		full := l.Limits
		s := &l.Limits
		s.RPM, s.TPM, s.Concurrency = share(full.RPM, n), share(full.TPM, n), share(full.Concurrency, n)
		if (full.RPM > 0 && s.RPM == 0) || (full.TPM > 0 && s.TPM == 0) || (full.Concurrency > 0 && s.Concurrency == 0) {
			return nil, failure.Wrap(failure.GatewayError, fmt.Sprintf(
				"the admission store (redis) is not reachable and this %s's limits cannot be split among %d replicas: retry shortly", l.Scope, n), err)
		}
		if s.Concurrency > 0 {
			if s.Concurrency -= r.liveOn(r.layerBase(l.Scope, l.ID) + ":l"); s.Concurrency <= 0 {
				fe := rateLimited(&l, KindConcurrency, share(full.Concurrency, n), time.Second)
				fe.Msg += shareNote(n)
				return nil, fe
			}
		}
		ls = append(ls, l)
	}
	h, ferr := r.fallback.Acquire(ctx, Request{Layers: ls, Tokens: req.Tokens})
	if fe := failure.From(ferr); fe != nil && fe.Class == failure.RateLimited {
		fe.Msg += shareNote(n)
	}
	return h, ferr
}

// shareNote ends the message of a refusal by a replica's share.
func shareNote(n int64) string {
	return fmt.Sprintf(" (this replica's share, 1/%d of the limit, while the admission store is not reachable)", n)
}
