#include "tickwheel/durable/scripts.h"

#include <array>
#include <cstdint>

#include "tickwheel/durable/sha1.h"

namespace tickwheel::durable::internal {
namespace {

// Shared by the shard scripts: Redis's clock, and the :state record
// "<version>:<attempt>:<deadline>:<payload bytes>:<owner>".
constexpr std::string_view kPrelude = R"lua(
-- The largest time a timer may have, in us: 2^53 - 1, the largest integer
-- a Lua number and a sorted-set score hold exactly.
local MAX_US = 9007199254740991
-- Every script checks all of its arguments before its first write: a Lua
-- error undoes nothing that ran before it, so a bad argument found halfway
-- would leave a shard half-changed (a timer out of :leases and in no other
-- set is lost). fail() raises an error reply; nothing has been written yet.
local function fail(what)
  error({err = 'ERR durable timer script: ' .. what})
end
-- ARGV[i] as an integer in [lo, hi] (no fraction, not NaN, not infinite).
local function int_arg(i, lo, hi)
  local x = tonumber(ARGV[i])
  if x == nil or x ~= x or x ~= math.floor(x) or x < lo or x > hi then
    fail('argument ' .. i .. ' is not an integer in [' .. lo .. ', ' ..
         hi .. ']: ' .. tostring(ARGV[i]))
  end
  return x
end
-- ARGV[i] as a non-empty string (a timer's id).
local function id_arg(i)
  local s = ARGV[i]
  if s == nil or #s == 0 then fail('argument ' .. i .. ' is not an id') end
  return s
end
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function parse(s)
  local v, a, d, n, o = string.match(s, '^(%d+):(%d+):(%d+):(%d+):(.*)$')
  return tonumber(v), tonumber(a), tonumber(d), tonumber(n), o
end
local function record(v, a, d, n, o)
  return string.format('%d:%d:%d:%d:%s', v, a, d, n, o)
end
-- (id, version[, extra...]) tuples of ARGV from `first`, `width` apart, each
-- checked: at least one, whole tuples, ids non-empty, versions integers.
local function tuples(first, width)
  local count = #ARGV - first + 1
  if count < width or count % width ~= 0 then
    fail('expected (id, version, ...) tuples of ' .. width ..
         ' arguments from argument ' .. first .. ', got ' .. count)
  end
  local ids, vers = {}, {}
  for i = first, #ARGV, width do
    ids[#ids + 1] = id_arg(i)
    vers[#vers + 1] = int_arg(i + 1, 0, MAX_US)
  end
  return ids, vers
end
-- For each id: its parsed record when it is held under `vers[i]`, else nil.
local function held(ids, vers)
  local states = redis.call('HMGET', KEYS[4], unpack(ids))
  local leases = redis.call('ZMSCORE', KEYS[2], unpack(ids))
  local out = {}
  for i = 1, #ids do
    if states[i] and leases[i] then
      local v, a, d, n, o = parse(states[i])
      if v ~= nil and v == vers[i] then
        out[i] = {v = v, a = a, d = d, n = n, o = o,
                  lease = tonumber(leases[i])}
      end
    end
  end
  return out
end
-- A time in [0, MAX_US]: total, for any number (NaN counts as 0).
local function clamp_us(t)
  if t ~= t or t < 0 then return 0 end
  if t > MAX_US then return MAX_US end
  return math.floor(t)
end
-- Gives back every id of `ids` that `h` says is held: ownerless in :state,
-- out of the leases, due again at when(i, t) with the attempt it returns.
-- Every value is computed before the first write, and the due time goes in
-- first, so that no error between the writes can leave a timer in neither
-- :due nor :leases.
-- Returns {now, then 1 per id given back and 0 per id no longer held}.
local function requeue(now, ids, h, when)
  local out, hset, zadd, zrem = {now}, {}, {}, {}
  for i = 1, #ids do
    local t = h[i]
    if t then
      local at, attempt = when(i, t)
      hset[#hset + 1] = ids[i]
      hset[#hset + 1] = record(t.v, attempt, t.d, t.n, '')
      zadd[#zadd + 1] = clamp_us(at)
      zadd[#zadd + 1] = ids[i]
      zrem[#zrem + 1] = ids[i]
      out[#out + 1] = 1
    else
      out[#out + 1] = 0
    end
  end
  if #zrem > 0 then
    redis.call('ZADD', KEYS[1], unpack(zadd))
    redis.call('ZREM', KEYS[2], unpack(zrem))
    redis.call('HSET', KEYS[4], unpack(hset))
  end
  return out
end
)lua";

// Reads before it writes: on a keyspace that exists it writes nothing, so
// that Connect() works on a Redis that is full (maxmemory) and refuses
// writes.
constexpr std::string_view kMeta = R"lua(
local shards = tonumber(ARGV[1])
local format = tonumber(ARGV[2])
if shards == nil or format == nil then
  return redis.error_reply('ERR durable timer script: bad shards or format')
end
local cur = redis.call('HMGET', KEYS[1], 'shards', 'format')
if cur[1] and cur[2] then return cur end
redis.call('HSETNX', KEYS[1], 'shards', ARGV[1])
redis.call('HSETNX', KEYS[1], 'format', ARGV[2])
return redis.call('HMGET', KEYS[1], 'shards', 'format')
)lua";

constexpr std::string_view kSchedule = R"lua(
local mode = ARGV[1]
if mode ~= 'at' and mode ~= 'after' then fail('mode is not at or after') end
local after = mode == 'after'
local maxd = int_arg(2, 0, MAX_US)
if #ARGV < 5 or (#ARGV - 2) % 3 ~= 0 then
  fail('expected (id, time, payload) triples')
end
local n = (#ARGV - 2) / 3
local times = {}
for i = 1, n do
  local j = 3 + (i - 1) * 3
  id_arg(j)
  times[i] = int_arg(j + 1, -MAX_US, MAX_US)
end
local now = now_us()
local base = redis.call('INCRBY', KEYS[5], n) - n
local states, payloads, dues, ids = {}, {}, {}, {}
local out = {now}
for i = 1, n do
  local j = 3 + (i - 1) * 3
  local id, d, p = ARGV[j], times[i], ARGV[j + 2]
  if after then d = now + d end
  if d < 0 then d = 0 elseif d > maxd then d = maxd end
  states[#states + 1] = id
  states[#states + 1] = record(base + i, 0, d, #p, '')
  payloads[#payloads + 1] = id
  payloads[#payloads + 1] = p
  dues[#dues + 1] = d
  dues[#dues + 1] = id
  ids[#ids + 1] = id
  out[#out + 1] = d
end
redis.call('HSET', KEYS[4], unpack(states))
redis.call('HSET', KEYS[3], unpack(payloads))
redis.call('ZREM', KEYS[2], unpack(ids))
redis.call('ZADD', KEYS[1], unpack(dues))
return out
)lua";

constexpr std::string_view kCancel = R"lua(
if ARGV[1] == nil or #ARGV[1] == 0 or #ARGV ~= 1 then
  return redis.error_reply('ERR durable timer script: cancel takes one id')
end
if redis.call('HDEL', KEYS[4], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
)lua";

constexpr std::string_view kClaim = R"lua(
if #ARGV ~= 7 or #ARGV[6] == 0 then fail('claim takes 7 arguments') end
local lookahead = int_arg(1, 0, MAX_US)
local lease = int_arg(2, 1, MAX_US)
local qdue, qahead = int_arg(3, 0, 100000), int_arg(4, 0, 100000)
local nstart, owner = int_arg(5, 0, 100000), ARGV[6]
local maxbytes = int_arg(7, 0, MAX_US)
local now = now_us()
local ids, scores, leased = {}, {}, {}
local more = 0
local function add(list, from_leases, limit)
  for i = 1, #list, 2 do
    ids[#ids + 1] = list[i]
    scores[#scores + 1] = tonumber(list[i + 1])
    leased[#leased + 1] = from_leases
  end
  if #list / 2 >= limit then more = 1 end
end
if qdue > 0 then
  add(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES',
                 'LIMIT', 0, qdue), true, qdue)
  if #ids < qdue then
    local left = qdue - #ids
    add(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES',
                   'LIMIT', 0, left), false, left)
  end
end
if qahead > 0 and lookahead > 0 then
  add(redis.call('ZRANGEBYSCORE', KEYS[1], string.format('(%d', now),
                 now + lookahead, 'WITHSCORES', 'LIMIT', 0, qahead),
      false, qahead)
end
local out = {now, -1, 0}
if #ids > 0 then
  local states = redis.call('HMGET', KEYS[4], unpack(ids))
  local recs, orphans = {}, {}
  for i = 1, #ids do
    if not states[i] then
      orphans[#orphans + 1] = ids[i]  -- in a set, with no timer: dropped
    else
      local v, a, d, n = parse(states[i])
      if v ~= nil then recs[i] = {a = a, d = d, n = n} end
    end
  end
  local base = redis.call('INCRBY', KEYS[5], #ids) - #ids
  local hset, zadd, zrem, taken, items = {}, {}, {}, {}, {}
  local bytes = 0
  for i = 1, #ids do
    local id, r = ids[i], recs[i]
    if not r then
      -- an orphan (removed below), or a record this library did not write
    elseif #taken > 0 and bytes >= maxbytes then
      more = 1
      break
    else
      local a = r.a
      local v, due, started, exp = base + i, scores[i], 0, 0
      if due <= now and nstart > 0 then
        started, nstart, a, exp = 1, nstart - 1, a + 1, now + lease
      else
        exp = math.max(due, now) + lease
      end
      bytes = bytes + r.n
      hset[#hset + 1] = id
      hset[#hset + 1] = record(v, a, r.d, r.n, owner)
      zadd[#zadd + 1] = clamp_us(exp)
      zadd[#zadd + 1] = id
      if not leased[i] then zrem[#zrem + 1] = id end
      taken[#taken + 1] = id
      items[#items + 1] = {id, v, a, r.d, due, started, clamp_us(exp)}
    end
  end
  if #orphans > 0 then
    redis.call('ZREM', KEYS[1], unpack(orphans))
    redis.call('ZREM', KEYS[2], unpack(orphans))
  end
  if #taken > 0 then
    redis.call('ZADD', KEYS[2], unpack(zadd))
    if #zrem > 0 then redis.call('ZREM', KEYS[1], unpack(zrem)) end
    redis.call('HSET', KEYS[4], unpack(hset))
    local payloads = redis.call('HMGET', KEYS[3], unpack(taken))
    for i = 1, #items do
      local it = items[i]
      for k = 1, 7 do out[#out + 1] = it[k] end
      out[#out + 1] = payloads[i] or ''
    end
  end
end
local first_due = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local first_lease = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local nxt = -1
if #first_due > 0 then nxt = tonumber(first_due[2]) end
if #first_lease > 0 then
  local l = tonumber(first_lease[2])
  if nxt < 0 or l < nxt then nxt = l end
end
out[2], out[3] = nxt, more
return out
)lua";

constexpr std::string_view kStart = R"lua(
local lease = int_arg(1, 1, MAX_US)
local ids, vers = tuples(2, 3)
local dues = {}
for i = 1, #ids do dues[i] = int_arg(2 + (i - 1) * 3 + 2, 0, MAX_US) end
local now = now_us()
local h = held(ids, vers)
local out = {now}
local hset, zadd = {}, {}
for i = 1, #ids do
  local r, t = 0, h[i]
  if t then
    if now < dues[i] or now < t.d then
      r = -1
    else
      r = t.a + 1
      hset[#hset + 1] = ids[i]
      hset[#hset + 1] = record(t.v, r, t.d, t.n, t.o)
      zadd[#zadd + 1] = clamp_us(now + lease)
      zadd[#zadd + 1] = ids[i]
    end
  end
  out[#out + 1] = r
end
if #hset > 0 then
  redis.call('ZADD', KEYS[2], unpack(zadd))
  redis.call('HSET', KEYS[4], unpack(hset))
end
return out
)lua";

constexpr std::string_view kAck = R"lua(
local ids, vers = tuples(1, 2)
local now = now_us()
local h = held(ids, vers)
local out, del = {now}, {}
for i = 1, #ids do
  if h[i] then
    del[#del + 1] = ids[i]
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if #del > 0 then
  redis.call('HDEL', KEYS[4], unpack(del))
  redis.call('HDEL', KEYS[3], unpack(del))
  redis.call('ZREM', KEYS[2], unpack(del))
end
return out
)lua";

// The back-off is total: a zero base or maximum is no back-off at all (never
// 0 x infinity), the exponent stops at 62, and the sum is clamped to MAX_US.
constexpr std::string_view kFail = R"lua(
local base, maxb = int_arg(1, 0, MAX_US), int_arg(2, 0, MAX_US)
local ids, vers = tuples(3, 2)
local now = now_us()
return requeue(now, ids, held(ids, vers), function(i, t)
  local delay = 0
  if base > 0 and maxb > 0 then
    delay = base * 2 ^ math.min(math.max(t.a, 1) - 1, 62)
    if delay > maxb then delay = maxb end
  end
  return now + delay, t.a
end)
)lua";

constexpr std::string_view kRelease = R"lua(
local ids, vers = tuples(1, 4)
local dues, undos = {}, {}
for i = 1, #ids do
  local j = 1 + (i - 1) * 4
  dues[i] = int_arg(j + 2, 0, MAX_US)
  undos[i] = int_arg(j + 3, 0, 1)
end
local now = now_us()
return requeue(now, ids, held(ids, vers), function(i, t)
  return dues[i], math.max(t.a - undos[i], 0)
end)
)lua";

constexpr std::string_view kRenew = R"lua(
local lease = int_arg(1, 1, MAX_US)
local ids, vers = tuples(2, 2)
local now = now_us()
local h = held(ids, vers)
local out, zadd = {now}, {}
for i = 1, #ids do
  local t = h[i]
  if t then
    local exp = clamp_us(math.max(t.lease, now + lease))
    zadd[#zadd + 1] = exp
    zadd[#zadd + 1] = ids[i]
    out[#out + 1] = exp
  else
    out[#out + 1] = 0
  end
end
if #zadd > 0 then redis.call('ZADD', KEYS[2], unpack(zadd)) end
return out
)lua";
// Redis 7's flags line for the scripts that must run on a full Redis
// (maxmemory reached, noeviction): those that free memory (ack, cancel) or
// hold it about steady (claim, start, fail, release, renew move a timer
// between :due and :leases and rewrite its record), so that timers already
// scheduled are delivered and acknowledged -- which is what frees memory.
// Without it, Redis refuses a script at its first write that may grow
// memory. schedule (which grows) and meta (which reads first, and writes
// only for a new keyspace) have no flags line: Redis then checks at their
// first such write, before anything was written, and answers OOM; a
// flags line without allow-oom would refuse meta's read as well.
constexpr std::string_view kAllowOom = "#!lua flags=allow-oom\n";

struct Body {
  std::string_view lua;
  bool prelude;    // needs kPrelude's helpers
  bool allow_oom;  // runs on a full Redis (kAllowOom)
};
constexpr std::array<Body, kScriptCount> kBodies = {{
    {kMeta, false, false},
    {kSchedule, true, false},
    {kCancel, false, true},
    {kClaim, true, true},
    {kStart, true, true},
    {kAck, true, true},
    {kFail, true, true},
    {kRelease, true, true},
    {kRenew, true, true},
}};
constexpr std::array<std::string_view, kScriptCount> kNames = {
    "meta", "schedule", "cancel",  "claim", "start",
    "ack",  "fail",     "release", "renew",
};

// The sources and their SHA-1, built once (thread-safe static
// initialisation), then read-only.
struct Compiled {
  std::array<std::string, kScriptCount> source;
  std::array<std::string, kScriptCount> sha;
};

const Compiled& Scripts() {
  static const Compiled* const compiled = [] {
    auto* c = new Compiled;
    for (int i = 0; i < kScriptCount; ++i) {
      const Body& b = kBodies[static_cast<size_t>(i)];
      c->source[static_cast<size_t>(i)] =
          std::string(b.allow_oom ? kAllowOom : "") +
          std::string(b.prelude ? kPrelude : "") + std::string(b.lua);
      c->sha[static_cast<size_t>(i)] =
          Sha1Hex(c->source[static_cast<size_t>(i)]);
    }
    return c;
  }();
  return *compiled;
}

}  // namespace

std::string_view ScriptSource(Script script) {
  return Scripts().source[static_cast<size_t>(script)];
}

const std::string& ScriptSha(Script script) {
  return Scripts().sha[static_cast<size_t>(script)];
}

std::string_view ScriptName(Script script) {
  return kNames[static_cast<size_t>(script)];
}

}  // namespace tickwheel::durable::internal
