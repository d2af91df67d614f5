--[[
evict.lua: deletes terminal jobs whose retention has lapsed, and forgets throttle windows
that have ended. Quarantined jobs are never in `retained`: they wait for an operator.

KEYS[1]  namespace prefix; derived keys (lib.lua): retained, throttle, throttle:expiry,
         job:<id>, errors:<id>, result:<id>, output:<id>, progress:<id>, clock,
         q:<queue>:counts
ARGV[1]  limit: the most jobs evicted (and, separately, windows forgotten) in this call
Replies  {0, evicted, windows forgotten}
Cost     O(limit * log N)
]]
--- @include rcall
--- @include K.retained
--- @include K.throttle
--- @include K.throttle_expiry
--- @include OK
--- @include now_ms
--- @include UNFINISHED
--- @include flush_counts
--- @include load_job
--- @include delete_job
local P = KEYS[1]
local limit = tonumber(ARGV[1])
local now = now_ms(P)
local lapsed = rcall('ZRANGEBYSCORE', K.retained(P), '-inf', now, 'LIMIT', 0, limit)
local evicted = 0
for _, id in ipairs(lapsed) do
  local j = load_job(P, id)
  if j and not UNFINISHED[j.state] then
    delete_job(P, id, j)
    evicted = evicted + 1
  else
    rcall('ZREM', K.retained(P), id)
  end
end
local ended = rcall('ZRANGEBYSCORE', K.throttle_expiry(P), '-inf', now, 'LIMIT', 0, limit)
for _, ukey in ipairs(ended) do
  rcall('HDEL', K.throttle(P), ukey)
  rcall('ZREM', K.throttle_expiry(P), ukey)
end
flush_counts(P)
return { OK, evicted, #ended }
