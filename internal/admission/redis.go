package admission

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	// Logf logs the degraded mode (at most once per DegradedLog) and lost settles; nil discards.
	Logf func(format string, args ...any)
	// DegradedLog is the least time between two degraded-mode log lines (DefaultDegradedLog).
	DegradedLog time.Duration
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
// reseed or a replica restart counts nothing twice. A settle adds to a spend or balance only
// when its seed key exists (else the seed, read later from the ledger, includes it).
//
// When Redis does not answer within Timeout, metered requests (a budget or a prepaid balance)
// are refused with a 503 naming the store and unmetered ones are admitted on this replica's
// own in-memory counters (docs/limits.md "Degraded mode"); for a second after a failure the
// store is not asked at all, so no request waits on a dead Redis.
type Redis struct {
	rdb      redis.UniversalClient
	o        RedisOptions
	fallback *Memory
	replica  string // random, names this process's holds
	seq      atomic.Uint64

	downUntil atomic.Int64 // Unix nanoseconds: skip Redis until then
	lastLog   atomic.Int64

	pauses chan pauseMsg // this replica's provider pauses, for SharePauses to publish

	mu      sync.Mutex
	live    map[*redisHold]struct{} // holds whose leases Run renews
	pending []*redisHold            // ends that failed, retried by Run
	unseed  []string                // seeds to drop once Redis answers (a credit it missed)
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
	return &Redis{rdb: rdb, o: o, fallback: NewMemory(o.Now, nil), replica: hex.EncodeToString(b[:]),
		live: make(map[*redisHold]struct{}), pauses: make(chan pauseMsg, 256)}
}

// Close closes the client.
func (r *Redis) Close() error { return r.rdb.Close() }

// Ping reports whether Redis answers within the timeout.
func (r *Redis) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	return r.rdb.Ping(ctx).Err()
}

// Run renews the leases of this replica's live holds every LeaseTTL/3 and retries the ends
// that failed every second, until ctx is done; then it makes a last attempt at the failed
// ends and returns nil.
func (r *Redis) Run(ctx context.Context) error {
	renew := time.NewTicker(r.o.LeaseTTL / 3)
	defer renew.Stop()
	retry := time.NewTicker(redisRetryInterval)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			r.retryEnds(context.WithoutCancel(ctx))
			return nil
		case <-renew.C:
			r.RenewLeases(ctx)
		case <-retry.C:
			r.retryEnds(ctx)
		}
	}
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

// errRedisDown is the cause of the degraded mode's refusals.
var errRedisDown = errors.New("admission: redis not reachable")

// down reports whether Redis failed less than a second ago.
func (r *Redis) down(now time.Time) bool { return now.UnixNano() < r.downUntil.Load() }

// failed records a failed call: Redis is skipped for a second, and the degraded mode is
// logged at most once per DegradedLog.
func (r *Redis) failed(err error) {
	now := time.Now()
	r.downUntil.Store(now.Add(redisRetryInterval).UnixNano())
	last := r.lastLog.Load()
	if now.UnixNano()-last >= int64(r.o.DegradedLog) && r.lastLog.CompareAndSwap(last, now.UnixNano()) {
		r.o.Logf("admission store (redis) not reachable: metered requests are refused with 503, unmetered ones admitted on this replica's own counters: %v", err)
	}
}

// degraded answers a request while Redis is down: a 503 naming the store for a metered
// request, this replica's own counters for the others.
func (r *Redis) degraded(ctx context.Context, req *Request, err error) (Hold, error) {
	if req.Metered() {
		return nil, failure.Wrap(failure.GatewayError,
			"the admission store (redis) is not reachable: requests with a budget or prepaid credit are refused until it answers; retry shortly", err)
	}
	return r.fallback.Acquire(ctx, *req)
}

// acquireScript checks the prepaid balance and every layer, and takes them all or nothing. It
// answers {0} admitted, {1, layer, kind, n} refused (layer 0: the balance; n: the retry-after
// in ms, or what is left in micro-USD), or {2, layer} seed missing.
var acquireScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local hid = ARGV[2]
local tok = tonumber(ARGV[3])
local res = tonumber(ARGV[4])
local exp = tonumber(ARGV[5])
local n = tonumber(ARGV[6])
local credit = ARGV[7] == '1'
local horizon = now - 60000

local function trim(w, wt)
  while true do
    local old = redis.call('ZRANGEBYSCORE', w, '-inf', horizon, 'LIMIT', 0, 256)
    if #old == 0 then return end
    local toks = redis.call('HMGET', wt, unpack(old))
    local dn, dt = 0, 0
    for j = 1, #old do
      dt = dt + (tonumber(toks[j]) or 0)
      if string.byte(old[j], 1) == 114 then dn = dn + 1 end
    end
    redis.call('ZREM', w, unpack(old))
    redis.call('HDEL', wt, unpack(old))
    redis.call('HINCRBY', wt, '_n', 0 - dn)
    redis.call('HINCRBY', wt, '_t', 0 - dt)
  end
end

local function purge(l, lr)
  while true do
    local old = redis.call('ZRANGEBYSCORE', l, '-inf', now, 'LIMIT', 0, 256)
    if #old == 0 then return end
    local rs = redis.call('HMGET', lr, unpack(old))
    local dr = 0
    for j = 1, #old do dr = dr + (tonumber(rs[j]) or 0) end
    redis.call('ZREM', l, unpack(old))
    redis.call('HDEL', lr, unpack(old))
    redis.call('HINCRBY', lr, '_r', 0 - dr)
  end
end

local function oldest(w)
  local o = redis.call('ZRANGE', w, 0, 0, 'WITHSCORES')
  if #o == 0 then return 1000 end
  return tonumber(o[2]) + 60000 - now
end

local ck = n * 5
if credit then
  local bal = redis.call('GET', KEYS[ck+3])
  if not bal then return {2, 0} end
  purge(KEYS[ck+1], KEYS[ck+2])
  local avail = tonumber(bal) - (tonumber(redis.call('HGET', KEYS[ck+2], '_r')) or 0)
  if res > avail or avail <= 0 then return {1, 0, 'credit', avail} end
end
for i = 1, n do
  local b = (i-1)*5
  local a = 7 + (i-1)*4
  local rpm, tpm, conc, budget = tonumber(ARGV[a+1]), tonumber(ARGV[a+2]), tonumber(ARGV[a+3]), tonumber(ARGV[a+4])
  trim(KEYS[b+1], KEYS[b+2])
  local c = redis.call('HMGET', KEYS[b+2], '_n', '_t')
  local cn, ct = tonumber(c[1]) or 0, tonumber(c[2]) or 0
  if rpm > 0 and cn + 1 > rpm then return {1, i, 'rpm', oldest(KEYS[b+1])} end
  if tpm > 0 and ct + tok > tpm and ct > 0 then return {1, i, 'tpm', oldest(KEYS[b+1])} end
  purge(KEYS[b+3], KEYS[b+4])
  if conc > 0 and redis.call('ZCARD', KEYS[b+3]) + 1 > conc then return {1, i, 'concurrency', 1000} end
  if budget > 0 then
    local sp = redis.call('GET', KEYS[b+5])
    if not sp then return {2, i} end
    local rem = budget - tonumber(sp) - (tonumber(redis.call('HGET', KEYS[b+4], '_r')) or 0)
    if res > rem or rem <= 0 then return {1, i, 'budget', rem} end
  end
end
local m = 'r:' .. hid
local lttl = (exp - now) * 2
for i = 1, n do
  local b = (i-1)*5
  redis.call('ZADD', KEYS[b+1], now, m)
  redis.call('HSET', KEYS[b+2], m, tok)
  redis.call('HINCRBY', KEYS[b+2], '_n', 1)
  redis.call('HINCRBY', KEYS[b+2], '_t', tok)
  redis.call('PEXPIRE', KEYS[b+1], 61000)
  redis.call('PEXPIRE', KEYS[b+2], 61000)
  redis.call('ZADD', KEYS[b+3], exp, hid)
  redis.call('HSET', KEYS[b+4], hid, res)
  redis.call('HINCRBY', KEYS[b+4], '_r', res)
  redis.call('PEXPIRE', KEYS[b+3], lttl)
  redis.call('PEXPIRE', KEYS[b+4], lttl)
end
if credit then
  redis.call('ZADD', KEYS[ck+1], exp, hid)
  redis.call('HSET', KEYS[ck+2], hid, res)
  redis.call('HINCRBY', KEYS[ck+2], '_r', res)
  redis.call('PEXPIRE', KEYS[ck+1], lttl)
  redis.call('PEXPIRE', KEYS[ck+2], lttl)
end
return {0}
`)

// endScript ends a hold, settled (ARGV[3] 1) or released, idempotently: a token charge is set
// (not added), a lease is removed once, and a spend or balance is charged only when the lease
// was still there; when it was not (it expired, or this end already ran and its answer was
// lost), the spend or balance seed is deleted so that the next Acquire reads it again from the
// ledger rather than guess.
var endScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local hid = ARGV[2]
local settled = ARGV[3] == '1'
local actual = tonumber(ARGV[4])
local est = tonumber(ARGV[5])
local cost = ARGV[6]
local n = tonumber(ARGV[7])
local credit = ARGV[8] == '1'
local m = 'r:' .. hid
for i = 1, n do
  local b = (i-1)*5
  local w, wt, l, lr, s = KEYS[b+1], KEYS[b+2], KEYS[b+3], KEYS[b+4], KEYS[b+5]
  local newt = 0
  if settled then newt = actual end
  local cur = redis.call('HGET', wt, m)
  local sc = redis.call('ZSCORE', w, m)
  if cur and sc and tonumber(sc) > now - 60000 then
    redis.call('HSET', wt, m, newt)
    redis.call('HINCRBY', wt, '_t', newt - tonumber(cur))
  elseif settled and actual > est then
    local t = 't:' .. hid
    if redis.call('ZADD', w, 'NX', now, t) == 1 then
      redis.call('HSET', wt, t, actual - est)
      redis.call('HINCRBY', wt, '_t', actual - est)
      redis.call('PEXPIRE', w, 61000)
      redis.call('PEXPIRE', wt, 61000)
    end
  end
  local r = redis.call('HGET', lr, hid)
  if r then
    redis.call('HDEL', lr, hid)
    redis.call('ZREM', l, hid)
    redis.call('HINCRBY', lr, '_r', 0 - tonumber(r))
  end
  if settled and ARGV[8+i] == '1' then
    if r then
      if redis.call('EXISTS', s) == 1 then redis.call('INCRBY', s, cost) end
    else
      redis.call('DEL', s)
    end
  end
end
if credit then
  local ck = n * 5
  local r = redis.call('HGET', KEYS[ck+2], hid)
  if r then
    redis.call('HDEL', KEYS[ck+2], hid)
    redis.call('ZREM', KEYS[ck+1], hid)
    redis.call('HINCRBY', KEYS[ck+2], '_r', 0 - tonumber(r))
  end
  if settled then
    if r then
      if redis.call('EXISTS', KEYS[ck+3]) == 1 then redis.call('DECRBY', KEYS[ck+3], cost) end
    else
      redis.call('DEL', KEYS[ck+3])
    end
  end
end
return 0
`)

// usageScript trims and purges a layer's window and leases and returns requests, tokens,
// leases, reserved and spent (-1: not seeded).
var usageScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local horizon = now - 60000
local w, wt, l, lr, s = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local live = redis.call('ZRANGEBYSCORE', w, '(' .. horizon, '+inf')
local rq, tk = 0, 0
if #live > 0 then
  local toks = redis.call('HMGET', wt, unpack(live))
  for j = 1, #live do
    tk = tk + (tonumber(toks[j]) or 0)
    if string.byte(live[j], 1) == 114 then rq = rq + 1 end
  end
end
local leases = redis.call('ZRANGEBYSCORE', l, '(' .. now, '+inf')
local rs = 0
if #leases > 0 then
  local v = redis.call('HMGET', lr, unpack(leases))
  for j = 1, #leases do rs = rs + (tonumber(v[j]) or 0) end
end
local sp = redis.call('GET', s)
if not sp then sp = -1 end
return {rq, tk, #leases, rs, tonumber(sp)}
`)

// creditScript adds ARGV[1] to a seeded balance.
var creditScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end
return false
`)

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
	if r.down(time.Now()) {
		return r.degraded(ctx, &req, errRedisDown)
	}
	h := &redisHold{r: r, id: r.replica + "." + strconv.FormatUint(r.seq.Add(1), 36),
		tokens: max(req.Tokens, 0), reserve: max(req.ReserveMicroUSD, 0)}
	if req.CreditAccount != "" {
		h.credit = r.creditBase(req.CreditAccount)
	}
	h.keys = make([]string, 0, redisScriptKeysLayer*MaxLayers+3)
	args := make([]any, 0, 7+4*MaxLayers)
	args = append(args, now.UnixMilli(), h.id, h.tokens, h.reserve, now.Add(r.o.LeaseTTL).UnixMilli(), 0, boolArg(h.credit != ""))
	layers := make([]*Layer, 0, MaxLayers)
	for i := range req.Layers {
		l := &req.Layers[i]
		if l.Limits.IsZero() {
			continue
		}
		base := r.layerBase(l.Scope, l.ID)
		h.keys = append(h.keys, base+":w", base+":wt", base+":l", base+":lr", spendKey(base, l.Limits.BudgetPeriod, now))
		h.budget[h.n] = l.Limits.BudgetMicroUSD > 0
		h.n++
		layers = append(layers, l)
		args = append(args, l.Limits.RPM, l.Limits.TPM, l.Limits.Concurrency, l.Limits.BudgetMicroUSD)
	}
	args[5] = h.n
	if h.credit != "" {
		h.keys = append(h.keys, h.credit+":l", h.credit+":lr", h.credit+":bal")
	}
	for range 4 {
		res, err := r.run(ctx, acquireScript, h.keys, args...)
		if err != nil {
			if ctx.Err() != nil {
				return nil, failure.Wrap(failure.Cancelled, "the request was cancelled", ctx.Err())
			}
			var re redis.Error
			if errors.As(err, &re) { // Redis answered with an error: not an outage
				return nil, failure.Wrap(failure.GatewayError, "the admission store (redis) answered with an error", err)
			}
			r.failed(err)
			return r.degraded(ctx, &req, err)
		}
		v, _ := res.([]any)
		if len(v) == 0 {
			return nil, failure.Wrap(failure.GatewayError, "internal error", fmt.Errorf("admission: unexpected redis answer %v", res))
		}
		switch code, _ := v[0].(int64); code {
		case 0:
			r.mu.Lock()
			r.live[h] = struct{}{}
			r.mu.Unlock()
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
			idx, _ := v[1].(int64)
			if err := r.seed(ctx, &req, layers, int(idx), h.keys, now); err != nil {
				return nil, err
			}
		}
	}
	return nil, failure.Wrap(failure.GatewayError, "the admission store could not seed its counters", errors.New("admission: seeds keep vanishing"))
}

// seed reads the missing seed of layer idx (0: the prepaid balance) from the seeder and sets
// it with SET NX: when another replica seeded first, its value stands.
func (r *Redis) seed(ctx context.Context, req *Request, layers []*Layer, idx int, keys []string, now time.Time) error {
	var v int64
	var err error
	var key string
	var ttl time.Duration
	if idx == 0 {
		key = keys[len(keys)-1]
		if r.o.Seeder != nil {
			v, err = r.o.Seeder.BalanceMicroUSD(ctx, req.CreditAccount)
		}
	} else {
		l := layers[idx-1]
		key = keys[(idx-1)*redisScriptKeysLayer+4]
		ttl = spendTTL(l.Limits.BudgetPeriod, now)
		if r.o.Seeder != nil {
			v, err = r.o.Seeder.SpentMicroUSD(ctx, l.Scope, l.ID, l.Limits.BudgetPeriod.Start(now))
		}
	}
	if err != nil {
		return seedError(ctx, err)
	}
	cctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	if err := r.rdb.SetNX(cctx, key, v, ttl).Err(); err != nil {
		if ctx.Err() != nil {
			return failure.Wrap(failure.Cancelled, "the request was cancelled", ctx.Err())
		}
		r.failed(err)
		return failure.Wrap(failure.GatewayError, "the admission store (redis) is not reachable: requests with a budget or prepaid credit are refused until it answers; retry shortly", err)
	}
	return nil
}

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
		r.failed(err)
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
	keys            []string // the acquire script's keys; the spend keys are re-aimed at end
	budget          [MaxLayers]bool
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

// finish runs the end script now; when Redis fails it is queued for Run to retry.
func (h *redisHold) finish() {
	r := h.r
	h.at = r.o.Now()
	r.mu.Lock()
	delete(r.live, h)
	r.mu.Unlock()
	if r.down(time.Now()) {
		r.queueEnd(h)
		return
	}
	if err := h.end(context.Background()); err != nil {
		r.failed(err)
		r.queueEnd(h)
	}
}

// end runs the end script with the settle's time: the spend is charged to the period in which
// the settle happened.
func (h *redisHold) end(ctx context.Context) error {
	args := make([]any, 0, 8+MaxLayers)
	args = append(args, h.at.UnixMilli(), h.id, boolArg(h.settled), h.actual, h.tokens, h.cost, h.n, boolArg(h.credit != ""))
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
			r.failed(err)
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
			r.failed(err)
			return
		}
		r.mu.Lock()
		if len(r.pending) > 0 && r.pending[0] == h {
			r.pending = r.pending[1:]
		}
		r.mu.Unlock()
	}
}

// RenewLeases extends the leases of this replica's live holds to now+LeaseTTL in one
// pipeline; Run calls it every LeaseTTL/3.
func (r *Redis) RenewLeases(ctx context.Context) {
	r.mu.Lock()
	hs := make([]*redisHold, 0, len(r.live))
	for h := range r.live {
		hs = append(hs, h)
	}
	r.mu.Unlock()
	if len(hs) == 0 {
		return
	}
	now := r.o.Now()
	exp := float64(now.Add(r.o.LeaseTTL).UnixMilli())
	lttl := 2 * r.o.LeaseTTL
	ctx, cancel := context.WithTimeout(ctx, 10*r.o.Timeout)
	defer cancel()
	p := r.rdb.Pipeline()
	for _, h := range hs {
		for i := range h.n {
			l := h.keys[i*redisScriptKeysLayer+2]
			p.ZAddXX(ctx, l, redis.Z{Score: exp, Member: h.id})
			p.PExpire(ctx, l, lttl)
			p.PExpire(ctx, h.keys[i*redisScriptKeysLayer+3], lttl)
		}
		if h.credit != "" {
			p.ZAddXX(ctx, h.credit+":l", redis.Z{Score: exp, Member: h.id})
			p.PExpire(ctx, h.credit+":l", lttl)
			p.PExpire(ctx, h.credit+":lr", lttl)
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		r.failed(err)
	}
}

// pauseMsg is one provider pause: the provider's pause scope and when the pause ends.
type pauseMsg struct {
	provider string
	until    time.Time
}

// PublishPause shares a provider pause (an upstream 429's retry-after, R-CIRCUIT-4) with every
// replica. It never blocks: the pause is queued for SharePauses, and dropped when 256 are
// already queued (the provider's next 429 pauses it again).
func (r *Redis) PublishPause(provider string, until time.Time) {
	select {
	case r.pauses <- pauseMsg{provider, until}:
	default:
	}
}

// pauseChannel is the pub/sub channel of pauses; pauseKey the key of a provider's pause in force
// (its end in Unix ms, expiring with it), read by a replica when it subscribes.
func (r *Redis) pauseChannel() string            { return r.o.Prefix + "pauses" }
func (r *Redis) pauseKey(provider string) string { return r.o.Prefix + "p:" + provider }

// SharePauses runs until ctx is done: it publishes this replica's pauses (PublishPause; a key
// with the pause's end and a PUBLISH, in one pipeline) and hands other replicas' pauses to
// apply (circuit.Set.PauseUntil): those published while it is subscribed, and, each time it
// (re)subscribes, those in force. Routing reads only the local copy apply keeps: no request
// waits on Redis for a pause. It returns nil when ctx is done.
func (r *Redis) SharePauses(ctx context.Context, apply func(provider string, until time.Time)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-r.pauses:
				r.publishPause(ctx, m)
			}
		}
	})
	for ctx.Err() == nil {
		r.subscribePauses(ctx, apply)
		t := time.NewTimer(redisRetryInterval)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

func (r *Redis) publishPause(ctx context.Context, m pauseMsg) {
	d := m.until.Sub(r.o.Now())
	if d <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	ms := strconv.FormatInt(m.until.UnixMilli(), 10)
	p := r.rdb.Pipeline()
	p.Set(ctx, r.pauseKey(m.provider), ms, d)
	p.Publish(ctx, r.pauseChannel(), r.replica+" "+ms+" "+m.provider)
	if _, err := p.Exec(ctx); err != nil {
		r.failed(err)
	}
}

// subscribePauses subscribes, applies the pauses in force, then applies each pause published
// by another replica until the subscription fails or ctx is done.
func (r *Redis) subscribePauses(ctx context.Context, apply func(string, time.Time)) {
	ps := r.rdb.Subscribe(ctx, r.pauseChannel())
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		if ctx.Err() == nil {
			r.failed(err)
		}
		return
	}
	iter := r.rdb.Scan(ctx, 0, r.o.Prefix+"p:*", 256).Iterator()
	for iter.Next(ctx) {
		if v, err := r.rdb.Get(ctx, iter.Val()).Int64(); err == nil {
			apply(strings.TrimPrefix(iter.Val(), r.o.Prefix+"p:"), time.UnixMilli(v))
		}
	}
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			replica, rest, _ := strings.Cut(m.Payload, " ")
			ms, provider, ok := strings.Cut(rest, " ")
			v, err := strconv.ParseInt(ms, 10, 64)
			if !ok || err != nil || replica == r.replica {
				continue
			}
			apply(provider, time.UnixMilli(v))
		}
	}
}

var (
	_ Store = (*Redis)(nil)
	_ Hold  = (*redisHold)(nil)
)
