package admission

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Defaults of RedisOptions.
const (
	DefaultRedisTimeout = 100 * time.Millisecond
	DefaultLeaseTTL     = 30 * time.Second
	DefaultRedisPrefix  = "sy:"
	// DefaultRedisPoolSize is the most connections a replica opens to Redis. go-redis's own
	// default, 10 per GOMAXPROCS (20 on two cores), queued 300 concurrent requests (an
	// admission and an end each) behind the pool until the 100 ms timeout refused metered ones;
	// Redis serves thousands of connections, and a gateway's calls are short.
	DefaultRedisPoolSize = 256
	// DefaultRedisMinIdle is the connections kept open while idle, so that a burst after a quiet
	// spell does not dial (a dial is part of the call's Timeout) before its first admission.
	DefaultRedisMinIdle  = 16
	DefaultDegradedLog   = 10 * time.Second
	redisRetryInterval   = time.Second
	redisMaxPendingEnds  = 65536
	redisScriptKeysLayer = 5
)

// RedisOptions configure a Redis store. The zero value gives the defaults.
type RedisOptions struct {
	// Now is the clock of windows, leases and periods (nil: time.Now). Replicas' clocks should
	// agree to well under a second (NTP): a window entry is stamped with its replica's clock.
	Now func() time.Time
	// Seeder reads spend and balances from the ledger when a counter has no seed; nil seeds
	// every counter at zero.
	Seeder Seeder
	// Timeout bounds every call to Redis (DefaultRedisTimeout, 100 ms): no request waits
	// longer on the store.
	Timeout time.Duration
	// LeaseTTL is how long a hold's concurrency slot and reserve outlive their replica: Run
	// renews the leases of live holds every LeaseTTL/3, so a crashed replica's slots and
	// reserves return within LeaseTTL (DefaultLeaseTTL, 30 s).
	LeaseTTL time.Duration
	// Prefix starts every key (DefaultRedisPrefix, "sy:").
	Prefix string
	// PoolSize is the most connections OpenRedis's client opens (DefaultRedisPoolSize, 256);
	// MinIdleConns the ones it keeps open while idle (DefaultRedisMinIdle, 16, at most
	// PoolSize). A call waiting for a free connection waits within Timeout.
	PoolSize     int
	MinIdleConns int
	// Logf logs the degraded mode (entered, then at most once per DegradedLog, and left), failed
	// background calls (at most once per DegradedLog), a loss of Redis's data and lost settles;
	// nil discards.
	Logf func(format string, args ...any)
	// DegradedLog is the least time between two degraded-mode log lines (DefaultDegradedLog).
	DegradedLog time.Duration
	// Flush, when set, makes durable the ledger entries this process queued so far (its ledger
	// writer's Flush). When Redis lost its data a replica calls it, within LossFlushTimeout,
	// before it re-registers its holds: the settles it charged to the lost counters are then in
	// the ledger before any replica reseeds them, as a reseed waits for every replica of before
	// the loss to re-register (docs/limits.md "Exactness"). nil: nothing to flush.
	Flush func(ctx context.Context) error
}

// Redis is the shared [Store] of many replicas (admission.url redis://, R-BILL-4): each
// Acquire is ONE Lua script that checks and takes every limit of every layer and the prepaid
// balance (one round trip), and each Settle or Release one more. Keys, per layer (scope, id):
//
//	PREFIX a:S:ID:w    sorted set: the window, one member per request (score: admission, ms)
//	PREFIX a:S:ID:wt   hash: each member's tokens, and _n, _t: requests and tokens in it
//	PREFIX a:S:ID:l    sorted set: leases of holds in flight (score: expiry, ms)
//	PREFIX a:S:ID:lr   hash: each lease's reserve, and _r: their sum
//	PREFIX a:S:ID:s:P  string: spend in period P (d<day>, m<month>, t), seeded from the ledger
//	PREFIX c:ACCOUNT:{l,lr,bal}  a prepaid account's leases and balance (seeded)
//
// A counter without its seed key (the first use, a new period, or a Redis that lost its data)
// is seeded from the [Seeder] with SET NX and the script runs again: a seed never adds, so a
// reseed or a replica restart counts nothing twice. A settle adds to a spend or balance when
// its seed key exists, else to the counter's float (COUNTER:x, a hash: request id -> micro-USD),
// which the seed adds while it reads the ledger without those request ids (seed, endScript).
//
// Besides, per store: PREFIX epoch (the data epoch), PREFIX replicas (the registry of live
// replicas) and PREFIX e:REPLICA (a replica's tombstones: the holds it ended in the last
// minute, so that an end retried after a lost answer counts once); redis_lease.go.
//
// A call that fails or does not answer within Timeout refuses a metered request (a budget or a
// prepaid balance) with a 503 naming the store and admits an unmetered one on this replica's
// share of its limits. When the failures over HealthWindow pass HealthFailureRatio the store
// is degraded: Redis is not asked on the request path except by one probe per
// HealthProbeEvery, so no request waits on a dead Redis (redis_health.go, docs/limits.md
// "Degraded mode").
type Redis struct {
	rdb      redis.UniversalClient
	o        RedisOptions
	fallback *Memory
	replica  string // random, names this process's holds
	tombKey  string // this replica's tombstones
	seq      atomic.Uint64

	health    health
	lastLog   atomic.Int64
	lastBgLog atomic.Int64
	replicas  atomic.Int64           // live replicas at the last heartbeat (0: none yet)
	chunk     atomic.Int64           // the holds of the next renewal chunk
	renewDue  atomic.Bool            // the last renewal failed: Run retries it each second
	epoch     atomic.Pointer[string] // the data epoch the live holds are registered under
	gen       atomic.Uint64          // re-registrations started (under mu)
	regMu     sync.Mutex             // one re-registration at a time
	joins     atomic.Int64           // heartbeats that joined the registry
	running   atomic.Bool            // Run is running: it re-registers after a loss (regKick)
	regKick   chan struct{}          // asks Run to re-register now

	pauses chan pauseMsg // this replica's provider pauses, for SharePauses to publish

	mu       sync.Mutex
	live     map[*redisHold]struct{} // holds whose leases Run renews
	liveConc map[string]int32        // live holds per lease key of a layer with a concurrency limit
	pending  []*redisHold            // ends that failed, retried by Run
	unseed   []string                // seeds to drop once Redis answers (a credit it missed)
	members  []string                // the registry at the last heartbeat
	// gateWait are the replicas a reseed waits for after Redis lost its data (seedGate), since
	// gateSince; nil none.
	gateWait  []string
	gateSince time.Time
}

// OpenRedis connects to the Redis of url (redis:// or rediss://, go-redis's ParseURL) with
// timeouts of o.Timeout and a pool of o.PoolSize connections, o.MinIdleConns kept open. It
// does not wait for Redis (the idle connections are dialed in the background): a Redis down at
// start is the degraded mode.
func OpenRedis(url string, o RedisOptions) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("admission: %w", err)
	}
	o = o.withDefaults()
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = o.Timeout, o.Timeout, o.Timeout, o.Timeout
	opt.PoolSize, opt.MinIdleConns = o.PoolSize, o.MinIdleConns
	opt.MaxRetries = -1 // a retry doubles the wait; the caller decides
	opt.ContextTimeoutEnabled = true
	return NewRedis(redis.NewClient(opt), o), nil
}

func (o RedisOptions) withDefaults() RedisOptions {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultRedisTimeout
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Prefix == "" {
		o.Prefix = DefaultRedisPrefix
	}
	if o.PoolSize <= 0 {
		o.PoolSize = DefaultRedisPoolSize
	}
	if o.MinIdleConns <= 0 {
		o.MinIdleConns = DefaultRedisMinIdle
	}
	o.MinIdleConns = min(o.MinIdleConns, o.PoolSize)
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.DegradedLog <= 0 {
		o.DegradedLog = DefaultDegradedLog
	}
	return o
}

// Options are the store's options after defaults (for observability and tests).
func (r *Redis) Options() RedisOptions { return r.o }

// NewRedis returns a store over rdb, which it owns (Close closes it).
func NewRedis(rdb redis.UniversalClient, o RedisOptions) *Redis {
	o = o.withDefaults()
	var b [6]byte
	_, _ = rand.Read(b[:])
	r := &Redis{rdb: rdb, o: o, fallback: NewMemory(o.Now, nil), replica: hex.EncodeToString(b[:]),
		live: make(map[*redisHold]struct{}), liveConc: make(map[string]int32), pauses: make(chan pauseMsg, 256),
		regKick: make(chan struct{}, 1)}
	r.tombKey = o.Prefix + "e:" + r.replica
	r.chunk.Store(renewChunkStart)
	return r
}

// Close closes the client.
func (r *Redis) Close() error { return r.rdb.Close() }

// Ping reports whether Redis answers within the timeout.
func (r *Redis) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	return r.rdb.Ping(ctx).Err()
}

// layerBase is the key prefix of a layer's counters.
func (r *Redis) layerBase(scope Scope, id string) string {
	return r.o.Prefix + "a:" + scope.String() + ":" + id
}

func (r *Redis) creditBase(account string) string { return r.o.Prefix + "c:" + account }

// spendKey names a layer's spend in the period of kind that contains t.
func spendKey(base string, kind Period, t time.Time) string {
	switch kind {
	case PeriodDay:
		return base + ":s:d" + strconv.FormatInt(kind.index(t), 10)
	case PeriodTotal:
		return base + ":s:t"
	}
	return base + ":s:m" + strconv.FormatInt(kind.index(t), 10)
}

// spendTTL is how long a period's spend key lives: past the period's end by a day (a reserve
// taken in it may settle in the next), forever for PeriodTotal.
func spendTTL(kind Period, t time.Time) time.Duration {
	switch kind {
	case PeriodDay:
		return kind.Start(t).AddDate(0, 0, 2).Sub(t)
	case PeriodTotal:
		return 0
	}
	return kind.Start(t).AddDate(0, 1, 1).Sub(t)
}

// Acquire implements [Store.Acquire] in one script call; a counter without a seed costs one
// ledger read, one SET NX and one more script call.
func (r *Redis) Acquire(ctx context.Context, req Request) (Hold, error) {
	if err := ctx.Err(); err != nil {
		return nil, failure.Wrap(failure.Cancelled, "the request was cancelled", err)
	}
	req.Layers = mergeLayers(req.Layers)
	if countLayers(req.Layers) > MaxLayers {
		return nil, failure.Wrap(failure.GatewayError, "internal error", errTooManyLayers)
	}
	now := r.o.Now()
	if !r.health.allow(time.Now()) {
		return r.degraded(ctx, &req, errRedisDegraded)
	}
	h := &redisHold{r: r, id: r.replica + "." + strconv.FormatUint(r.seq.Add(1), 36), rid: req.RequestID,
		tokens: max(req.Tokens, 0), reserve: max(req.ReserveMicroUSD, 0)}
	if req.CreditAccount != "" {
		h.credit = r.creditBase(req.CreditAccount)
	}
	h.keys = make([]string, 0, redisScriptKeysLayer*MaxLayers+5)
	args := make([]any, 0, 8+4*MaxLayers)
	args = append(args, now.UnixMilli(), h.id, h.tokens, h.reserve, now.Add(r.o.LeaseTTL).UnixMilli(), 0, boolArg(h.credit != ""), "")
	layers := make([]*Layer, 0, MaxLayers)
	for i := range req.Layers {
		l := &req.Layers[i]
		if l.Limits.IsZero() {
			continue
		}
		base := r.layerBase(l.Scope, l.ID)
		h.keys = append(h.keys, base+":w", base+":wt", base+":l", base+":lr", spendKey(base, l.Limits.BudgetPeriod, now))
		h.budget[h.n] = l.Limits.BudgetMicroUSD > 0
		h.conc[h.n] = l.Limits.Concurrency > 0
		h.n++
		layers = append(layers, l)
		args = append(args, l.Limits.RPM, l.Limits.TPM, l.Limits.Concurrency, l.Limits.BudgetMicroUSD)
	}
	args[5] = h.n
	if h.credit != "" {
		h.keys = append(h.keys, h.credit+":l", h.credit+":lr", h.credit+":bal")
	}
	h.keys = append(h.keys, r.tombKey, r.epochKey())
	for range 2 * (MaxLayers + 2) {
		gen := r.gen.Load()
		args[7] = r.epochNow()
		res, err := r.run(ctx, acquireScript, h.keys, args...)
		if err != nil {
			if ctx.Err() != nil {
				return nil, failure.Wrap(failure.Cancelled, "the request was cancelled", ctx.Err())
			}
			var re redis.Error
			if errors.As(err, &re) { // Redis answered with an error: not an outage
				return nil, failure.Wrap(failure.GatewayError, "the admission store (redis) answered with an error", err)
			}
			r.fail(err)
			return r.degraded(ctx, &req, err)
		}
		r.ok() // answered (admitted or not): counts for the degraded mode's ratio
		v, _ := res.([]any)
		if len(v) == 0 {
			return nil, failure.Wrap(failure.GatewayError, "internal error", fmt.Errorf("admission: unexpected redis answer %v", res))
		}
		switch code, _ := v[0].(int64); code {
		case 0:
			r.mu.Lock()
			r.live[h] = struct{}{}
			h.countConc(1)
			moved := r.gen.Load() != gen
			r.mu.Unlock()
			if moved {
				// Redis lost its data while this admission was in flight, and this replica's
				// re-registration may have missed the hold: register it now.
				if st := r.renew(ctx, []*redisHold{h}); st.Failed > 0 {
					h.Release()
					return nil, r.unreachable(ctx, errEpochMoved)
				}
			}
			return h, nil
		case 1:
			idx, _ := v[1].(int64)
			kind, _ := v[2].(string)
			num, _ := v[3].(int64)
			if idx == 0 {
				return nil, overCredit(h.reserve, num)
			}
			l := layers[idx-1]
			switch kind {
			case KindRPM:
				return nil, rateLimited(l, KindRPM, l.Limits.RPM, time.Duration(num)*time.Millisecond)
			case KindTPM:
				return nil, rateLimited(l, KindTPM, l.Limits.TPM, time.Duration(num)*time.Millisecond)
			case KindConcurrency:
				return nil, rateLimited(l, KindConcurrency, l.Limits.Concurrency, time.Second)
			}
			return nil, overBudget(l, h.reserve, num)
		case 2:
			if err := r.seedGate(ctx); err != nil {
				return nil, err
			}
			idx, _ := v[1].(int64)
			if err := r.seed(ctx, &req, layers, int(idx), h, now); err != nil {
				return nil, err
			}
		case 3:
			if r.epochNow() != args[7] {
				continue // re-registered meanwhile: again under the epoch in force
			}
			if args[7] != "" && r.running.Load() {
				// Redis lost its data: Run re-registers this replica's holds after making its
				// ledger's queued settles durable; this request does not wait for that write.
				r.kickRegister()
				if req.Metered() {
					return nil, rebuilding(errEpochMoved)
				}
				return r.degraded(ctx, &req, errEpochMoved)
			}
			if err := r.reregister(ctx); err != nil {
				if ctx.Err() != nil {
					return nil, failure.Wrap(failure.Cancelled, "the request was cancelled", ctx.Err())
				}
				r.fail(err)
				return r.degraded(ctx, &req, err)
			}
		}
	}
	return nil, failure.Wrap(failure.GatewayError, "the admission store could not seed its counters", errors.New("admission: seeds keep vanishing"))
}

// seed reads the missing seed of layer idx (0: the prepaid balance) from the seeder and sets
// it unless another replica seeded first (its value stands). The settles that found the counter
// without a seed are in its float under their request ids (endScript): the seed is the ledger
// read without those ids plus the float, so each counts once, whether or not its ledger entry
// was written when the ledger was read. A settle that joins the float during the read (the read
// may or may not have counted it) makes seedScript refuse, and the seed is read again; after
// seedAttempts reads it is set all the same (high by those settles, never low).
func (r *Redis) seed(ctx context.Context, req *Request, layers []*Layer, idx int, h *redisHold, now time.Time) error {
	var key string
	var ttl time.Duration
	sign := 1
	if idx == 0 {
		key, sign = h.keys[h.n*redisScriptKeysLayer+2], -1
	} else {
		key = h.keys[(idx-1)*redisScriptKeysLayer+4]
		ttl = spendTTL(layers[idx-1].Limits.BudgetPeriod, now)
	}
	// The epoch the read starts under: a seed read before Redis lost its data (it may miss the
	// settles the lost counter held) must not be set after the loss, before the re-registration
	// and its gate (seedScript answers -2, and Acquire starts again: the rebuilding 503).
	epoch := r.epochNow()
	for attempt := 1; ; attempt++ {
		res, err := r.run(ctx, floatScript, []string{key + ":x"}, seedFloatTTL.Milliseconds())
		if err != nil {
			return r.unreachable(ctx, err)
		}
		fields, _ := res.([]any)
		exclude := make([]string, 0, len(fields))
		for _, f := range fields {
			if id, ok := f.(string); ok && id != floatUnkeyed {
				exclude = append(exclude, id)
			}
		}
		var v int64
		if r.o.Seeder != nil {
			if idx == 0 {
				v, err = r.o.Seeder.BalanceMicroUSD(ctx, req.CreditAccount, exclude)
			} else {
				l := layers[idx-1]
				v, err = r.o.Seeder.SpentMicroUSD(ctx, l.Scope, l.ID, l.Limits.BudgetPeriod.Start(now), exclude)
			}
		}
		if err != nil {
			return seedError(ctx, err)
		}
		check := len(fields)
		if attempt >= seedAttempts {
			check = -1
		}
		res, err = r.run(ctx, seedScript, []string{key, key + ":x", r.epochKey()}, v, ttl.Milliseconds(), sign, check, epoch)
		if err != nil {
			return r.unreachable(ctx, err)
		}
		if n, _ := res.(int64); n != -1 {
			return nil // set, seeded already, or (-2) the epoch moved: Acquire's script tells
		}
	}
}

const (
	// seedFloatTTL is how long a counter's float outlives its last settle, or a seeder that
	// died while reading.
	seedFloatTTL = 30 * time.Second
	// floatCap bounds the request ids a float keeps (the settles that find their counter
	// without a seed: at most the holds in flight when Redis lost its data, or at a period
	// boundary); past it a settle is added to the float's unkeyed part ("_") while a seed is
	// read, else left to the seed (docs/limits.md "Exactness").
	floatCap = 4096
	// floatUnkeyed is the float's field of settles without a request id.
	floatUnkeyed = "_"
	// seedAttempts bounds the ledger reads of one seed (seedScript refuses a float that grew
	// during the read).
	seedAttempts = 4
)

// run runs a script within the timeout.
func (r *Redis) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	return s.Run(ctx, r.rdb, keys, args...).Result()
}

func boolArg(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Usage implements [Store.Usage].
func (r *Redis) Usage(ctx context.Context, l Layer) (Usage, error) {
	now := r.o.Now()
	base := r.layerBase(l.Scope, l.ID)
	res, err := r.run(ctx, usageScript, []string{base + ":w", base + ":wt", base + ":l", base + ":lr", spendKey(base, l.Limits.BudgetPeriod, now)}, now.UnixMilli())
	if err != nil {
		return Usage{}, err
	}
	v, _ := res.([]any)
	if len(v) != 5 {
		return Usage{}, fmt.Errorf("admission: unexpected redis answer %v", res)
	}
	n := func(i int) int64 { x, _ := v[i].(int64); return x }
	return Usage{Requests: n(0), Tokens: n(1), InFlight: n(2), ReservedMicroUSD: n(3), SpentMicroUSD: max(n(4), 0)}, nil
}

// Balance implements [Store.Balance].
func (r *Redis) Balance(ctx context.Context, accountID string) (Balance, error) {
	now := r.o.Now()
	base := r.creditBase(accountID)
	res, err := r.run(ctx, usageScript, []string{base + ":w", base + ":wt", base + ":l", base + ":lr", base + ":bal"}, now.UnixMilli())
	if err != nil {
		return Balance{}, err
	}
	v, _ := res.([]any)
	if len(v) != 5 {
		return Balance{}, fmt.Errorf("admission: unexpected redis answer %v", res)
	}
	n := func(i int) int64 { x, _ := v[i].(int64); return x }
	if n(4) < 0 {
		// -1 is "no seed"; a real negative balance (an overspend) reads the key itself.
		s, err := r.rdb.Get(ctx, base+":bal").Int64()
		if errors.Is(err, redis.Nil) {
			return Balance{}, nil
		}
		if err != nil {
			return Balance{}, err
		}
		return Balance{Seeded: true, BalanceMicroUSD: s, ReservedMicroUSD: n(3)}, nil
	}
	return Balance{Seeded: true, BalanceMicroUSD: n(4), ReservedMicroUSD: n(3)}, nil
}

// Credit implements [Store.Credit]: one INCRBY when the balance is seeded. When Redis does not
// answer, the balance's seed is dropped as soon as it does (Run retries), so that the next
// prepaid request reseeds it from the store, which has the credit: a credit is never lost from
// the shared balance. (An INCRBY whose reply was lost may then be counted by the reseed only.)
func (r *Redis) Credit(ctx context.Context, accountID string, deltaMicroUSD int64) error {
	key := r.creditBase(accountID) + ":bal"
	_, err := r.run(ctx, creditScript, []string{key}, deltaMicroUSD)
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		r.logBackground("a credit", err)
		r.mu.Lock()
		r.unseed = append(r.unseed, key)
		r.mu.Unlock()
	}
	return err
}

// redisHold is a Redis store's Hold.
type redisHold struct {
	r               *Redis
	id              string
	rid             string          // the ledger's request id (Request.RequestID), "" none
	keys            []string        // the acquire script's keys; the spend keys are re-aimed at end
	budget          [MaxLayers]bool // the layer has a budget
	conc            [MaxLayers]bool // the layer has a concurrency limit
	n               int
	credit          string // the prepaid account's key base, "" none
	tokens, reserve int64
	done            atomic.Bool

	// set at end
	settled      bool
	actual, cost int64
	at           time.Time
}

// Settle implements [Hold.Settle]: one script call.
func (h *redisHold) Settle(actualTokens, actualCostMicroUSD int64) {
	if h.done.Swap(true) {
		return
	}
	h.settled, h.actual, h.cost = true, max(actualTokens, 0), max(actualCostMicroUSD, 0)
	h.finish()
}

// Release implements [Hold.Release]: one script call.
func (h *redisHold) Release() {
	if h.done.Swap(true) {
		return
	}
	h.finish()
}

// countConc adds d to the live holds of each of h's layers with a concurrency limit (the
// degraded mode's share counts them). r.mu must be held.
func (h *redisHold) countConc(d int32) {
	for i := range h.n {
		if h.conc[i] {
			k := h.keys[i*redisScriptKeysLayer+2]
			if h.r.liveConc[k] += d; h.r.liveConc[k] <= 0 {
				delete(h.r.liveConc, k)
			}
		}
	}
}

// finish runs the end script now; when Redis fails, or the store is degraded, it is queued for
// Run to retry.
func (h *redisHold) finish() {
	r := h.r
	h.at = r.o.Now()
	r.mu.Lock()
	if _, ok := r.live[h]; ok {
		delete(r.live, h)
		h.countConc(-1)
	}
	r.mu.Unlock()
	if r.Degraded() {
		r.queueEnd(h)
		return
	}
	if err := h.end(context.Background()); err != nil {
		r.fail(err)
		r.queueEnd(h)
		return
	}
	r.ok()
}

// end runs the end script with the settle's time: the spend is charged to the period in which
// the settle happened.
func (h *redisHold) end(ctx context.Context) error {
	args := make([]any, 0, 12+MaxLayers)
	args = append(args, h.at.UnixMilli(), h.id, boolArg(h.settled), h.actual, h.tokens, h.cost, h.n, boolArg(h.credit != ""),
		tombKeep(h.r.o.LeaseTTL).Milliseconds(), h.rid, seedFloatTTL.Milliseconds(), floatCap)
	for i := range h.n {
		args = append(args, boolArg(h.budget[i]))
		if h.budget[i] {
			base := h.keys[i*redisScriptKeysLayer]
			base = base[:len(base)-len(":w")]
			kind := periodOfKey(h.keys[i*redisScriptKeysLayer+4])
			h.keys[i*redisScriptKeysLayer+4] = spendKey(base, kind, h.at)
		}
	}
	_, err := h.r.run(ctx, endScript, h.keys, args...)
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	return err
}

// periodOfKey reads the period kind back from a spend key's last part (s:d…, s:m…, s:t).
func periodOfKey(k string) Period {
	for i := len(k) - 1; i > 0; i-- {
		if k[i] == ':' {
			switch k[i+1] {
			case 'd':
				return PeriodDay
			case 't':
				return PeriodTotal
			}
			return PeriodMonth
		}
	}
	return PeriodMonth
}

// queueEnd keeps a failed end for Run to retry; past redisMaxPendingEnds the oldest is dropped
// (its lease expires, returning its slot and reserve, and its settle is in the ledger: the
// spend is then low until a reseed) and logged.
func (r *Redis) queueEnd(h *redisHold) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) >= redisMaxPendingEnds {
		r.pending = r.pending[1:]
		r.o.Logf("admission store (redis): too many holds waiting to end; one settle is lost from the shared counters (the ledger has it)")
	}
	r.pending = append(r.pending, h)
}

// PendingEnds returns how many ended holds and missed credits wait for Redis to apply them (Run
// retries them).
func (r *Redis) PendingEnds() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending) + len(r.unseed)
}

// retryEnds drops the seeds of credits Redis missed, then retries the ends that failed, oldest
// first, stopping at the first failure.
func (r *Redis) retryEnds(ctx context.Context) {
	r.mu.Lock()
	keys := r.unseed
	r.unseed = nil
	r.mu.Unlock()
	if len(keys) > 0 {
		cctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
		err := r.rdb.Del(cctx, keys...).Err()
		cancel()
		if err != nil {
			r.logBackground("dropping the seed of a missed credit", err)
			r.mu.Lock()
			r.unseed = append(r.unseed, keys...)
			r.mu.Unlock()
			return
		}
	}
	for {
		r.mu.Lock()
		if len(r.pending) == 0 {
			r.mu.Unlock()
			return
		}
		h := r.pending[0]
		r.mu.Unlock()
		if err := h.end(ctx); err != nil {
			r.logBackground("ending a request again", err)
			return
		}
		r.mu.Lock()
		if len(r.pending) > 0 && r.pending[0] == h {
			r.pending = r.pending[1:]
		}
		r.mu.Unlock()
	}
}

var (
	_ Store = (*Redis)(nil)
	_ Hold  = (*redisHold)(nil)
)
