#include "tickwheel/durable/scripts.h"

#include <array>
#include <cstdint>

#include "tickwheel/durable/sha1.h"

namespace tickwheel::durable::internal {
namespace {

// Shared by the shard scripts: Redis's clock, and the :state record
// "<version>:<attempt>:<deadline>:<payload bytes>:<owner>".
constexpr std::string_view kPrelude = R"lua(
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
-- (id, version[, extra...]) tuples of ARGV from `first`, `width` apart.
local function tuples(first, width)
  local ids, vers = {}, {}
  for i = first, #ARGV, width do
    ids[#ids + 1] = ARGV[i]
    vers[#vers + 1] = tonumber(ARGV[i + 1])
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
      if v == vers[i] then
        out[i] = {v = v, a = a, d = d, n = n, o = o,
                  lease = tonumber(leases[i])}
      end
    end
  end
  return out
end
-- Gives back every id of `ids` that `h` says is held: ownerless in :state,
-- out of the leases, due again at when(i, t) with the attempt it returns.
-- Returns {now, then 1 per id given back and 0 per id no longer held}.
local function requeue(now, ids, h, when)
  local out, hset, zadd, zrem = {now}, {}, {}, {}
  for i = 1, #ids do
    local t = h[i]
    if t then
      local at, attempt = when(i, t)
      hset[#hset + 1] = ids[i]
      hset[#hset + 1] = record(t.v, attempt, t.d, t.n, '')
      zadd[#zadd + 1] = at
      zadd[#zadd + 1] = ids[i]
      zrem[#zrem + 1] = ids[i]
      out[#out + 1] = 1
    else
      out[#out + 1] = 0
    end
  end
  if #zrem > 0 then
    redis.call('HSET', KEYS[4], unpack(hset))
    redis.call('ZREM', KEYS[2], unpack(zrem))
    redis.call('ZADD', KEYS[1], unpack(zadd))
  end
  return out
end
)lua";

constexpr std::string_view kMeta = R"lua(
redis.call('HSETNX', KEYS[1], 'shards', ARGV[1])
redis.call('HSETNX', KEYS[1], 'format', ARGV[2])
return redis.call('HMGET', KEYS[1], 'shards', 'format')
)lua";

constexpr std::string_view kSchedule = R"lua(
local now = now_us()
local after = ARGV[1] == 'after'
local maxd = tonumber(ARGV[2])
local n = (#ARGV - 2) / 3
local base = redis.call('INCRBY', KEYS[5], n) - n
local states, payloads, dues, ids = {}, {}, {}, {}
local out = {now}
for i = 1, n do
  local j = 3 + (i - 1) * 3
  local id, d, p = ARGV[j], tonumber(ARGV[j + 1]), ARGV[j + 2]
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
if redis.call('HDEL', KEYS[4], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
)lua";

constexpr std::string_view kClaim = R"lua(
local now = now_us()
local lookahead, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local qdue, qahead = tonumber(ARGV[3]), tonumber(ARGV[4])
local nstart, owner, maxbytes = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
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
  local base = redis.call('INCRBY', KEYS[5], #ids) - #ids
  local hset, zadd, zrem, orphans, taken, items = {}, {}, {}, {}, {}, {}
  local bytes = 0
  for i = 1, #ids do
    local id, s = ids[i], states[i]
    if not s then
      orphans[#orphans + 1] = id
    elseif #taken > 0 and bytes >= maxbytes then
      more = 1
      break
    else
      local _, a, d, n = parse(s)
      local v, due, started, exp = base + i, scores[i], 0, 0
      if due <= now and nstart > 0 then
        started, nstart, a, exp = 1, nstart - 1, a + 1, now + lease
      else
        exp = math.max(due, now) + lease
      end
      bytes = bytes + n
      hset[#hset + 1] = id
      hset[#hset + 1] = record(v, a, d, n, owner)
      zadd[#zadd + 1] = exp
      zadd[#zadd + 1] = id
      if not leased[i] then zrem[#zrem + 1] = id end
      taken[#taken + 1] = id
      items[#items + 1] = {id, v, a, d, due, started, exp}
    end
  end
  if #orphans > 0 then
    redis.call('ZREM', KEYS[1], unpack(orphans))
    redis.call('ZREM', KEYS[2], unpack(orphans))
  end
  if #taken > 0 then
    redis.call('HSET', KEYS[4], unpack(hset))
    redis.call('ZADD', KEYS[2], unpack(zadd))
    if #zrem > 0 then redis.call('ZREM', KEYS[1], unpack(zrem)) end
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
local now = now_us()
local lease = tonumber(ARGV[1])
local ids, vers = tuples(2, 3)
local h = held(ids, vers)
local out = {now}
local hset, zadd = {}, {}
for i = 1, #ids do
  local r, t = 0, h[i]
  if t then
    if now < tonumber(ARGV[2 + (i - 1) * 3 + 2]) or now < t.d then
      r = -1
    else
      r = t.a + 1
      hset[#hset + 1] = ids[i]
      hset[#hset + 1] = record(t.v, r, t.d, t.n, t.o)
      zadd[#zadd + 1] = now + lease
      zadd[#zadd + 1] = ids[i]
    end
  end
  out[#out + 1] = r
end
if #hset > 0 then
  redis.call('HSET', KEYS[4], unpack(hset))
  redis.call('ZADD', KEYS[2], unpack(zadd))
end
return out
)lua";

constexpr std::string_view kAck = R"lua(
local now = now_us()
local ids, vers = tuples(1, 2)
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

constexpr std::string_view kFail = R"lua(
local now = now_us()
local base, maxb = tonumber(ARGV[1]), tonumber(ARGV[2])
local ids, vers = tuples(3, 2)
return requeue(now, ids, held(ids, vers), function(i, t)
  local delay = base * 2 ^ (math.max(t.a, 1) - 1)
  if delay > maxb then delay = maxb end
  return now + math.floor(delay), t.a
end)
)lua";

constexpr std::string_view kRelease = R"lua(
local now = now_us()
local ids, vers = tuples(1, 4)
return requeue(now, ids, held(ids, vers), function(i, t)
  local j = 1 + (i - 1) * 4
  return tonumber(ARGV[j + 2]), math.max(t.a - tonumber(ARGV[j + 3]), 0)
end)
)lua";

constexpr std::string_view kRenew = R"lua(
local now = now_us()
local lease = tonumber(ARGV[1])
local ids, vers = tuples(2, 2)
local h = held(ids, vers)
local out, zadd = {now}, {}
for i = 1, #ids do
  local t = h[i]
  if t then
    local exp = math.max(t.lease, now + lease)
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

struct Body {
  std::string_view lua;
  bool prelude;  // needs kPrelude's helpers
};
constexpr std::array<Body, kScriptCount> kBodies = {{
    {kMeta, false},
    {kSchedule, true},
    {kCancel, false},
    {kClaim, true},
    {kStart, true},
    {kAck, true},
    {kFail, true},
    {kRelease, true},
    {kRenew, true},
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
