--[[
evict.lua: deletes terminal jobs whose retention has lapsed, and forgets throttle windows
that have ended. Quarantined jobs are never in `retained`: they wait for an operator.

All reads come first, with a check of every structure the writes touch; the writes
follow. A job whose data is unusable is parked (Store.CorruptJobs) and leaves retained;
the others are evicted. An unusable structure (retained, throttle, counts, ...) refuses
the call with CorruptError before any write.

KEYS[1]  namespace prefix; derived keys (lib.lua): retained, throttle, throttle:expiry,
         job:<id>, errors:<id>, result:<id>, output:<id>, progress:<id>, corrupt, clock,
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
--- @include delete_job
--- @include need
--- @include structure_error
--- @include load_job_checked
--- @include K.corrupt
--- @include need_counts
--- @include park_corrupt
local P = KEYS[1]
local limit = tonumber(ARGV[1])
local now = now_ms(P)
for _, k in ipairs({ { K.retained(P), 'zset' }, { K.throttle(P), 'hash' }, { K.throttle_expiry(P), 'zset' } }) do
  need(k[1], k[2])
end
local bad = structure_error()
if bad then return bad end

-- 1. reads, and the check of every structure the writes touch. A job whose own data is
-- unusable is parked (it leaves retained); an unusable structure refuses the call.
local FIELDS = { 'state', 'queue', 'ret', 'aux' }
local lapsed = rcall('ZRANGEBYSCORE', K.retained(P), '-inf', now, 'LIMIT', 0, limit)
local jobs, parked = {}, {}
for i, id in ipairs(lapsed) do
  local j, why = load_job_checked(P, id, FIELDS)
  if why then
    parked[i] = why
    need(K.corrupt(P), 'hash')
  elseif j and not UNFINISHED[j.state] then
    jobs[i] = j
    need_counts(P, j.queue)
  end
end
local ended = rcall('ZRANGEBYSCORE', K.throttle_expiry(P), '-inf', now, 'LIMIT', 0, limit)
bad = structure_error()
if bad then return bad end

-- 2. writes
local evicted = 0
for i, id in ipairs(lapsed) do
  if jobs[i] then
    delete_job(P, id, jobs[i])
    evicted = evicted + 1
  else
    rcall('ZREM', K.retained(P), id)
    if parked[i] then park_corrupt(P, id, parked[i]) end
  end
end
for _, ukey in ipairs(ended) do
  rcall('HDEL', K.throttle(P), ukey)
  rcall('ZREM', K.throttle_expiry(P), ukey)
end
flush_counts(P)
return { OK, evicted, #ended }
