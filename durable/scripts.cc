#include "tickwheel/durable/scripts.h"

#include <array>
#include <cstdint>

#include "tickwheel/durable/script_sources.h"
#include "tickwheel/durable/sha1.h"

namespace tickwheel::durable::internal {
namespace {

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

// Announces, when asked (a hint window > 0), the shard's earliest new
// deadline on the hint channel if it comes before Redis's now + the window:
// processes that deliver then look at the shard in time for it rather than
// at their next poll (durable/hint_listener.h). redis.pcall: a PUBLISH that
// fails (an ACL user without the channel) fails nothing; the timer is
// scheduled and polling finds it.
constexpr std::string_view kSchedule = R"lua(
local mode = ARGV[1]
if mode ~= 'at' and mode ~= 'after' then fail('mode is not at or after') end
local after = mode == 'after'
local maxd = int_arg(2, 0, MAX_US)
local window = int_arg(3, 0, MAX_US)
local shard = int_arg(4, 0, 1000000)
local channel = ARGV[5]
if #ARGV < 9 or (#ARGV - 5) % 4 ~= 0 then
  fail('expected (id, time, payload, max attempts) tuples')
end
local n = (#ARGV - 5) / 4
local times, lims = {}, {}
for i = 1, n do
  local j = 6 + (i - 1) * 4
  id_arg(j)
  times[i] = int_arg(j + 1, -MAX_US, MAX_US)
  lims[i] = int_arg(j + 3, 0, 1000000)
end
local now = now_us()
local base = redis.call('INCRBY', KEYS[5], n) - n
local states, payloads, dues, ids, lset, lunset = {}, {}, {}, {}, {}, {}
local out = {now}
local first = MAX_US
for i = 1, n do
  local j = 6 + (i - 1) * 4
  local id, d, p = ARGV[j], times[i], ARGV[j + 2]
  if after then d = now + d end
  if d < 0 then d = 0 elseif d > maxd then d = maxd end
  if d < first then first = d end
  states[#states + 1] = id
  states[#states + 1] = record(base + i, 0, d, #p, '')
  payloads[#payloads + 1] = id
  payloads[#payloads + 1] = p
  dues[#dues + 1] = d
  dues[#dues + 1] = id
  ids[#ids + 1] = id
  if lims[i] > 0 then
    lset[#lset + 1] = id
    lset[#lset + 1] = lims[i]
  else
    lunset[#lunset + 1] = id
  end
  out[#out + 1] = d
end
redis.call('HSET', KEYS[4], unpack(states))
redis.call('HSET', KEYS[3], unpack(payloads))
redis.call('ZREM', KEYS[2], unpack(ids))
redis.call('ZADD', KEYS[1], unpack(dues))
redis.call('ZREM', KEYS[6], unpack(ids))
redis.call('HDEL', KEYS[8], unpack(ids))
if #lset > 0 then redis.call('HSET', KEYS[7], unpack(lset)) end
if #lunset > 0 then redis.call('HDEL', KEYS[7], unpack(lunset)) end
if window > 0 and #channel > 0 and first < now + window then
  redis.pcall('PUBLISH', channel, string.format('%d %d', shard, first))
end
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
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HDEL', KEYS[7], ARGV[1])
redis.call('HDEL', KEYS[8], ARGV[1])
return 1
)lua";

constexpr std::string_view kClaim = R"lua(
if #ARGV ~= 8 or #ARGV[6] == 0 then fail('claim takes 8 arguments') end
local lookahead = int_arg(1, 0, MAX_US)
local lease = int_arg(2, 1, MAX_US)
local qdue, qahead = int_arg(3, 0, 100000), int_arg(4, 0, 100000)
local nstart, owner = int_arg(5, 0, 100000), ARGV[6]
local maxbytes = int_arg(7, 0, MAX_US)
local keep = int_arg(8, 0, MAX_US)
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
local out = {now, -1, 0, 0}
local buried = {}
if #ids > 0 then
  local states = redis.call('HMGET', KEYS[4], unpack(ids))
  local recs, orphans = {}, {}
  for i = 1, #ids do
    if not states[i] then
      orphans[#orphans + 1] = ids[i]  -- in a set, with no timer: dropped
    else
      local v, a, d, n, o = parse(states[i])
      if v ~= nil then recs[i] = {v = v, a = a, d = d, n = n, o = o} end
    end
  end
  -- A lease that ended on a timer out of attempts: its last attempt failed
  -- (the process died, hung or lost Redis); dead-lettered, not claimed.
  local ended = {}
  for i = 1, #ids do
    if leased[i] and recs[i] then ended[#ended + 1] = i end
  end
  local lim = {}
  if #ended > 0 then lim = limits(ids) end
  for _, i in ipairs(ended) do
    local r = recs[i]
    if lim[i] and r.a >= lim[i] then
      buried[#buried + 1] = {id = ids[i], v = r.v, a = r.a, d = r.d, n = r.n,
        err = 'the lease of ' .. r.o .. ' ended without an acknowledgement'}
      recs[i] = nil
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
  bury(now, buried, keep)
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
out[2], out[3], out[4] = nxt, more, #buried
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
  redis.call('HDEL', KEYS[7], unpack(del))
  redis.call('HDEL', KEYS[8], unpack(del))
end
return out
)lua";

// The back-off is total: a zero base or maximum is no back-off at all (never
// 0 x infinity), the exponent stops at 62, and the sum is clamped to MAX_US.
constexpr std::string_view kFail = R"lua(
local base, maxb = int_arg(1, 0, MAX_US), int_arg(2, 0, MAX_US)
local keep = int_arg(3, 0, MAX_US)
local ids, vers = tuples(4, 3)
local now = now_us()
local h = held(ids, vers)
local lim = limits(ids)
local again, buried, errs = {}, {}, {}
for i = 1, #ids do
  local t = h[i]
  if t then
    local err = ARGV[4 + (i - 1) * 3 + 2]
    if lim[i] and t.a >= lim[i] then
      buried[#buried + 1] = {id = ids[i], v = t.v, a = t.a, d = t.d, n = t.n,
                             err = err}
    else
      again[i] = t
      errs[#errs + 1] = ids[i]
      errs[#errs + 1] = err
    end
  end
end
local out = requeue(now, ids, again, function(i, t)
  local delay = 0
  if base > 0 and maxb > 0 then
    delay = base * 2 ^ math.min(math.max(t.a, 1) - 1, 62)
    if delay > maxb then delay = maxb end
  end
  return now + delay, t.a
end)
if #errs > 0 then redis.call('HSET', KEYS[8], unpack(errs)) end
for i = 1, #ids do
  if h[i] and not again[i] then out[i + 1] = 2 end
end
bury(now, buried, keep)
return out
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
// The dead-letter scripts that change nothing but what they delete or
// move (retry, purge) run on a full Redis too; those that only read (get,
// dead-letter list) say so, which also lets them run on a full Redis.
constexpr std::string_view kAllowOom = "#!lua flags=allow-oom\n";
constexpr std::string_view kNoWrites = "#!lua flags=no-writes\n";

struct Body {
  std::string_view lua;
  bool prelude;            // needs lua::kPrelude's helpers
  bool dead;               // needs lua::kDeadHelpers (and lua::kPrelude)
  std::string_view flags;  // the flags line, or empty
};
// Not constexpr: the dead-letter sources live in scripts_admin.cc
// (constant-initialised there, so ready before any use).
std::array<Body, kScriptCount> Bodies() {
  return {{
      {kMeta, false, false, ""},
      {kSchedule, true, false, ""},
      {kCancel, false, false, kAllowOom},
      {kClaim, true, true, kAllowOom},
      {kStart, true, false, kAllowOom},
      {kAck, true, false, kAllowOom},
      {kFail, true, true, kAllowOom},
      {kRelease, true, false, kAllowOom},
      {kRenew, true, false, kAllowOom},
      {lua::kGet, true, false, kNoWrites},
      {lua::kDeadList, true, false, kNoWrites},
      {lua::kDeadOp, true, true, kAllowOom},
  }};
}
constexpr std::array<std::string_view, kScriptCount> kNames = {
    "meta", "schedule", "cancel", "claim", "start",     "ack",
    "fail", "release",  "renew",  "get",   "dead-list", "dead-op",
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
    const std::array<Body, kScriptCount> bodies = Bodies();
    for (int i = 0; i < kScriptCount; ++i) {
      const Body& b = bodies[static_cast<size_t>(i)];
      c->source[static_cast<size_t>(i)] =
          std::string(b.flags) + std::string(b.prelude ? lua::kPrelude : "") +
          std::string(b.dead ? lua::kDeadHelpers : "") + std::string(b.lua);
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
