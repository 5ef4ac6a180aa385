// The Lua sources of the dead-letter set and of Get(): the helpers that move
// a timer into, out of and away from the set (used by the fail and claim
// scripts too), and the scripts that read one timer, page through the set,
// and retry or purge dead letters. scripts.h documents arguments and
// replies; scripts.cc builds and names them.

#include "tickwheel/durable/script_sources.h"

namespace tickwheel::durable::internal::lua {

// KEYS[6] :dead (id -> when it was dead-lettered), KEYS[7] :limit (id ->
// max attempts), KEYS[8] :error (id -> its last failure). A dead letter
// keeps its :state record (ownerless) and its payload, and is in :dead and
// in neither :due nor :leases. An id in :dead that is also in :due or
// :leases was scheduled again by a process that does not know the set: it
// is live, and its :dead entry is stale.
const std::string_view kDeadHelpers = R"lua(
-- Deletes the dead letters among `ids` with everything of theirs, and the
-- stale :dead entries among them. Returns how many dead letters it deleted.
local function purge_dead(ids)
  if #ids == 0 then return 0 end
  local dead = redis.call('ZMSCORE', KEYS[6], unpack(ids))
  local dues = redis.call('ZMSCORE', KEYS[1], unpack(ids))
  local leases = redis.call('ZMSCORE', KEYS[2], unpack(ids))
  local gone, stale = {}, {}
  for i = 1, #ids do
    if dead[i] then
      if dues[i] or leases[i] then
        stale[#stale + 1] = ids[i]
      else
        gone[#gone + 1] = ids[i]
      end
    end
  end
  if #stale > 0 then redis.call('ZREM', KEYS[6], unpack(stale)) end
  if #gone > 0 then
    redis.call('ZREM', KEYS[6], unpack(gone))
    redis.call('HDEL', KEYS[4], unpack(gone))
    redis.call('HDEL', KEYS[3], unpack(gone))
    redis.call('HDEL', KEYS[7], unpack(gone))
    redis.call('HDEL', KEYS[8], unpack(gone))
  end
  return #gone
end
-- Deletes up to 16 dead letters older than `keep` us (0: keeps them all):
-- retention, paid for by the script that adds dead letters.
local function trim_dead(now, keep)
  if keep <= 0 or now - keep < 0 then return end
  purge_dead(redis.call('ZRANGEBYSCORE', KEYS[6], '-inf',
                        string.format('%d', now - keep), 'LIMIT', 0, 16))
end
-- Moves the timers of `list` ({id, v, a, d, n, err} each, every one held
-- or due) to the dead-letter set: in :dead since now (written first), out
-- of :due and :leases, ownerless, with their last error. Then trims.
local function bury(now, list, keep)
  if #list == 0 then return end
  local zadd, hset, herr, ids = {}, {}, {}, {}
  for _, t in ipairs(list) do
    zadd[#zadd + 1] = now
    zadd[#zadd + 1] = t.id
    hset[#hset + 1] = t.id
    hset[#hset + 1] = record(t.v, t.a, t.d, t.n, '')
    herr[#herr + 1] = t.id
    herr[#herr + 1] = t.err
    ids[#ids + 1] = t.id
  end
  redis.call('ZADD', KEYS[6], unpack(zadd))
  redis.call('ZREM', KEYS[2], unpack(ids))
  redis.call('ZREM', KEYS[1], unpack(ids))
  redis.call('HSET', KEYS[4], unpack(hset))
  redis.call('HSET', KEYS[8], unpack(herr))
  trim_dead(now, keep)
end
-- The max attempts of each id (nil: no limit).
local function limits(ids)
  local raw = redis.call('HMGET', KEYS[7], unpack(ids))
  local out = {}
  for i = 1, #ids do
    local m = tonumber(raw[i])
    if m and m > 0 then out[i] = m end
  end
  return out
end
)lua";

// Reads, writes nothing.
const std::string_view kGet = R"lua(
if #ARGV ~= 1 then fail('get takes one id') end
local id = id_arg(1)
local now = now_us()
local rec = redis.call('HGET', KEYS[4], id)
if not rec then return {now} end
local v, a, d, n, o = parse(rec)
if v == nil then fail('the record of this id was not written by tickwheel') end
local function score(key)
  local s = redis.call('ZSCORE', key, id)
  if s then return tonumber(s) end
  return -1
end
return {now, v, a, d, o, redis.call('HGET', KEYS[3], id) or '',
        score(KEYS[1]), score(KEYS[2]), score(KEYS[6]),
        redis.call('HGET', KEYS[8], id) or '',
        tonumber(redis.call('HGET', KEYS[7], id) or '0') or 0}
)lua";

// Reads, writes nothing. The set is ordered by (time, id), ids by their
// bytes as Redis orders members of equal score; Lua's own string order
// follows the locale, so ties are compared byte by byte here.
const std::string_view kDeadList = R"lua(
if #ARGV ~= 3 then fail('dead-letter list takes 3 arguments') end
local cs = int_arg(1, -1, MAX_US)
local cid = ARGV[2]
local limit = int_arg(3, 1, 10000)
local function bytes_after(x, y)
  for i = 1, math.min(#x, #y) do
    local p, q = string.byte(x, i), string.byte(y, i)
    if p ~= q then return p > q end
  end
  return #x > #y
end
local now = now_us()
local ids, scores = {}, {}
if cs >= 0 then
  local at, off = string.format('%d', cs), 0
  while #ids < limit do
    local tie = redis.call('ZRANGEBYSCORE', KEYS[6], at, at, 'LIMIT', off, 1000)
    for i = 1, #tie do
      if #ids < limit and bytes_after(tie[i], cid) then
        ids[#ids + 1] = tie[i]
        scores[#scores + 1] = cs
      end
    end
    if #tie < 1000 then break end
    off = off + 1000
  end
end
if #ids < limit then
  local from = '-inf'
  if cs >= 0 then from = string.format('(%d', cs) end
  local rest = redis.call('ZRANGEBYSCORE', KEYS[6], from, '+inf',
                          'WITHSCORES', 'LIMIT', 0, limit - #ids)
  for i = 1, #rest, 2 do
    ids[#ids + 1] = rest[i]
    scores[#scores + 1] = tonumber(rest[i + 1])
  end
end
local out = {now}
if #ids == 0 then return out end
local states = redis.call('HMGET', KEYS[4], unpack(ids))
local payloads = redis.call('HMGET', KEYS[3], unpack(ids))
local errors = redis.call('HMGET', KEYS[8], unpack(ids))
local dues = redis.call('ZMSCORE', KEYS[1], unpack(ids))
local leases = redis.call('ZMSCORE', KEYS[2], unpack(ids))
for i = 1, #ids do
  local v, a, d = nil, 0, 0
  if states[i] then v, a, d = parse(states[i]) end
  local valid = 0
  if v ~= nil and not dues[i] and not leases[i] then valid = 1 end
  out[#out + 1] = ids[i]
  out[#out + 1] = scores[i]
  out[#out + 1] = valid
  out[#out + 1] = a or 0
  out[#out + 1] = d or 0
  out[#out + 1] = payloads[i] or ''
  out[#out + 1] = errors[i] or ''
end
return out
)lua";

const std::string_view kDeadOp = R"lua(
local op, mode = ARGV[1], ARGV[2]
if op ~= 'retry' and op ~= 'purge' then fail('op is not retry or purge') end
if mode ~= 'at' and mode ~= 'after' then fail('mode is not at or after') end
local t = int_arg(3, 0, MAX_US)
local upto = int_arg(4, -1, MAX_US)
local limit = int_arg(5, 1, 100000)
for i = 6, #ARGV do id_arg(i) end
local now = now_us()
local ids = {}
local all = #ARGV < 6
if all then
  if upto < 0 then upto = now end
  ids = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf',
                   string.format('%d', upto), 'LIMIT', 0, limit)
else
  for i = 6, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local n = 0
if op == 'purge' then
  n = purge_dead(ids)
elseif #ids > 0 then
  local due = t
  if mode == 'after' then due = clamp_us(now + t) end
  local dead = redis.call('ZMSCORE', KEYS[6], unpack(ids))
  local dues = redis.call('ZMSCORE', KEYS[1], unpack(ids))
  local leases = redis.call('ZMSCORE', KEYS[2], unpack(ids))
  local states = redis.call('HMGET', KEYS[4], unpack(ids))
  local live, stale = {}, {}
  for i = 1, #ids do
    if dead[i] then
      local v, a, d, bytes
      if states[i] then v, a, d, bytes = parse(states[i]) end
      if v ~= nil and not dues[i] and not leases[i] then
        live[#live + 1] = {id = ids[i], d = d, n = bytes}
      else
        stale[#stale + 1] = ids[i]
      end
    end
  end
  if #stale > 0 then redis.call('ZREM', KEYS[6], unpack(stale)) end
  if #live > 0 then
    local base = redis.call('INCRBY', KEYS[5], #live) - #live
    local zadd, hset, rem = {}, {}, {}
    for k, x in ipairs(live) do
      zadd[#zadd + 1] = due
      zadd[#zadd + 1] = x.id
      hset[#hset + 1] = x.id
      hset[#hset + 1] = record(base + k, 0, x.d, x.n, '')
      rem[#rem + 1] = x.id
    end
    redis.call('ZADD', KEYS[1], unpack(zadd))
    redis.call('ZREM', KEYS[6], unpack(rem))
    redis.call('HSET', KEYS[4], unpack(hset))
    redis.call('HDEL', KEYS[8], unpack(rem))
    n = #live
  end
end
local more = 0
if all and #ids >= limit then more = 1 end
return {now, n, more}
)lua";

}  // namespace tickwheel::durable::internal::lua
