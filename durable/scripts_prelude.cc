// The Lua helpers every shard script but meta and cancel opens with:
// argument checks, Redis's clock, the :state record, and moving held timers
// back to :due. scripts.h documents the scripts; scripts.cc assembles them.

#include "tickwheel/durable/script_sources.h"

namespace tickwheel::durable::internal::lua {

// Shared by the shard scripts: Redis's clock, and the :state record
// "<version>:<attempt>:<deadline>:<payload bytes>:<owner>".
const std::string_view kPrelude = R"lua(
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

}  // namespace tickwheel::durable::internal::lua
