package admission

import "github.com/redis/go-redis/v9"

// The Lua scripts of the Redis store. The keys of the acquire and end scripts are a hold's
// (redisHold.keys): five per layer (window, window tokens, leases, lease reserves, spend), then,
// for a prepaid account, three (leases, lease reserves, balance), then this replica's
// tombstones (the holds it ended) and the data epoch.

// acquireScript checks the prepaid balance and every layer, and takes them all or nothing. It
// answers {0} admitted, {1, layer, kind, n} refused (layer 0: the balance; n: the retry-after
// in ms, or what is left in micro-USD), {2, layer} seed missing, or {3} the data epoch is not
// the one this replica registered its holds under (Redis lost its data: re-register first).
//
// ARGV: now (ms), hold id, tokens, reserve, lease expiry (ms), layers n, credit (1/0), epoch,
// then rpm, tpm, concurrency, budget per layer.
var acquireScript = redis.NewScript(`
if redis.call('GET', KEYS[#KEYS]) ~= ARGV[8] then return {3} end
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
  local a = 8 + (i-1)*4
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

// endScript ends a hold, settled (ARGV[3] 1) or released, exactly once: a hold already in this
// replica's tombstones (the end ran and its answer was lost) changes nothing; otherwise the
// hold is added to them, its token charge is set (not added), its lease and reserve are
// removed when still there, and a settle charges each budget's spend and the prepaid balance
// whether or not the lease was still there (a lease that expired while renewals failed still
// settles). A spend or balance without its seed (Redis lost its data, or a new period) gets the
// settle in its float (COUNTER:x, a hash) under the request id: the seed reads the ledger
// without the float's request ids and adds the float (seedScript), so the settle counts once
// whether or not its ledger entry is written yet. A settle without a request id, or past
// floatCap entries, is added to the float's "_" only while a seed is read (the float exists),
// else left to the seed. No end ever deletes a counter.
//
// ARGV: now (ms), hold id, settled (1/0), actual tokens, estimated tokens, cost, layers n,
// credit (1/0), tombstone retention (ms), request id ("" none), float ttl (ms), float cap, then
// one budget flag (1/0) per layer.
var endScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local hid = ARGV[2]
local settled = ARGV[3] == '1'
local actual = tonumber(ARGV[4])
local est = tonumber(ARGV[5])
local cost = ARGV[6]
local n = tonumber(ARGV[7])
local credit = ARGV[8] == '1'
local keep = tonumber(ARGV[9])
local rid = ARGV[10]
local fttl = tonumber(ARGV[11])
local fcap = tonumber(ARGV[12])
local function float(x)
  if rid ~= '' and redis.call('HLEN', x) < fcap then
    redis.call('HINCRBY', x, rid, cost)
    redis.call('PEXPIRE', x, fttl)
  elseif redis.call('EXISTS', x) == 1 then
    redis.call('HINCRBY', x, '_', cost)
  end
end
local tomb = KEYS[#KEYS-1]
if redis.call('ZSCORE', tomb, hid) then return 1 end
redis.call('ZADD', tomb, now, hid)
redis.call('ZREMRANGEBYSCORE', tomb, '-inf', now - keep)
redis.call('PEXPIRE', tomb, keep)
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
  if settled and ARGV[12+i] == '1' then
    if redis.call('EXISTS', s) == 1 then
      redis.call('INCRBY', s, cost)
    else
      float(s .. ':x')
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
    if redis.call('EXISTS', KEYS[ck+3]) == 1 then
      redis.call('DECRBY', KEYS[ck+3], cost)
    else
      float(KEYS[ck+3] .. ':x')
    end
  end
end
return 0
`)

// renewScript extends, and puts back when gone, the leases of a chunk of live holds: each
// lease is set to expire at ARGV[1] (ms), and a reserve that is gone (the lease expired and an
// Acquire purged it, or Redis lost its data) is added back to its layer's or account's sum. A
// hold in this replica's tombstones (KEYS[1]: it ended meanwhile) is skipped. Each key's ttl
// is then set once. It answers the number of leases put back.
//
// KEYS: tombstones, then the chunk's lease keys, each once. ARGV: expiry (ms), key ttl (ms),
// then per hold: id, reserve, pairs, and per pair the indexes in KEYS of its leases and lease
// reserves.
var renewScript = redis.NewScript(`
local exp = tonumber(ARGV[1])
local lttl = tonumber(ARGV[2])
local a, back = 3, 0
while a <= #ARGV do
  local hid, res, np = ARGV[a], tonumber(ARGV[a+1]), tonumber(ARGV[a+2])
  a = a + 3
  local ended = redis.call('ZSCORE', KEYS[1], hid)
  for j = 1, np do
    local l, lr = KEYS[tonumber(ARGV[a])], KEYS[tonumber(ARGV[a+1])]
    a = a + 2
    if not ended then
      redis.call('ZADD', l, exp, hid)
      if redis.call('HSETNX', lr, hid, res) == 1 then
        redis.call('HINCRBY', lr, '_r', res)
        back = back + 1
      end
    end
  end
end
for k = 2, #KEYS do redis.call('PEXPIRE', KEYS[k], lttl) end
return back
`)

// epochScript creates the data epoch (KEYS[1]) as ARGV[1] when there is none, and answers the
// epoch in force.
var epochScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
`)

// heartbeatScript registers this replica (ARGV[2]) as live at ARGV[1] (ms) in the registry
// (KEYS[2]) when the data epoch (KEYS[1]) is still ARGV[3], the one it registered its holds
// under, drops replicas not seen for ARGV[4] ms, and answers {1, members}; when the epoch is
// another or none it registers nothing and answers {0}.
var heartbeatScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[3] then return {0} end
local now, stale = tonumber(ARGV[1]), tonumber(ARGV[4])
redis.call('ZADD', KEYS[2], now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - stale)
redis.call('PEXPIRE', KEYS[2], stale * 10)
return {1, redis.call('ZRANGE', KEYS[2], 0, -1)}
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

// floatScript opens the float of a counter being seeded (KEYS[1], the counter's key with ":x",
// a hash: request id -> settled micro-USD, and "_" for settles without one) when it has none,
// makes it live ARGV[1] ms (a seeder that died), and answers its fields: the request ids the
// ledger read must leave out, and "_".
var floatScript = redis.NewScript(`
redis.call('HSETNX', KEYS[1], '_', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return redis.call('HKEYS', KEYS[1])
`)

// seedScript sets a counter's seed (KEYS[1]) unless it has one: the ledger's value ARGV[1]
// (read without the float's request ids) plus (ARGV[3] 1: a spend) or minus (-1: a balance)
// the float's sum (KEYS[2]), with a ttl of ARGV[2] ms (0 none); the float is then dropped. When
// the float no longer has ARGV[4] fields (a settle without a seed ended during the ledger read:
// the read may have counted it too) it sets nothing and answers -1, and the seed is read again;
// ARGV[4] -1 skips that check. A seed read under another data epoch than the one in force
// (KEYS[3] is not ARGV[5]: Redis lost its data during the read, which may predate settles the
// lost counter held) sets nothing and answers -2. It answers 1 set, 0 already seeded.
var seedScript = redis.NewScript(`
if redis.call('GET', KEYS[3]) ~= ARGV[5] then return -2 end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('DEL', KEYS[2])
  return 0
end
local n = tonumber(ARGV[4])
if n >= 0 and redis.call('HLEN', KEYS[2]) ~= n then return -1 end
local f = 0
local vs = redis.call('HVALS', KEYS[2])
for i = 1, #vs do f = f + tonumber(vs[i]) end
local v = tonumber(ARGV[1]) + tonumber(ARGV[3]) * f
local ttl = tonumber(ARGV[2])
if ttl > 0 then redis.call('SET', KEYS[1], v, 'PX', ttl) else redis.call('SET', KEYS[1], v) end
redis.call('DEL', KEYS[2])
return 1
`)

// creditScript adds ARGV[1] to a seeded balance.
var creditScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end
return false
`)
