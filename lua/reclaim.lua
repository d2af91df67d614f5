--[[
reclaim.lua: applies LeaseLost to jobs whose lease expired.

Each such job: crash_attempt+1 (attempts are not spent), the crash is charged to the step
in progress, and at the crash limit the job is quarantined and its fingerprint recorded,
which blocks new enqueues and admission of its siblings until an operator releases it.
Otherwise the job is retryable after backoff on its crash count, from a base of its own
(StoreConfig.CrashRetryBase, short: a lost lease is most often a dead host, not the job).

KEYS[1]  namespace prefix; derived keys (lib.lua): leases, job:<id>, errors:<id>,
         scheduled, quarantine, unique, clock, q:<queue>:counts
ARGV[1]  limit: the most jobs reclaimed in this call
ARGV[2]  crash limit
ARGV[3]  crash backoff base ms
ARGV[4]  backoff cap ms
Replies  {0, {id, fingerprint, crash_attempt, quarantined 0/1}, ...}
Cost     O(limit * log N)
]]
--- @include rcall
--- @include K.job
--- @include K.leases
--- @include OK
--- @include now_ms
--- @include quarantine
--- @include flush_counts
--- @include push_error
--- @include load_job
--- @include backoff
--- @include drop_lease
--- @include finalize
--- @include schedule
local P = KEYS[1]
local limit, crash_limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local base, cap = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms(P)
local reply = { OK }
local expired = rcall('ZRANGEBYSCORE', K.leases(P), '-inf', now, 'LIMIT', 0, limit)
for _, id in ipairs(expired) do
  local j = load_job(P, id)
  drop_lease(P, id)
  if j and j.state == 'running' then
    local crash = j.crash + 1
    local jk = K.job(P, id)
    rcall('HSET', jk, 'crash', crash)
    if j.step ~= '' then rcall('HINCRBY', jk, 'crash:' .. j.step, 1) end
    push_error(P, id, 'lease_lost (crash ' .. crash .. ')')
    local quarantined = 0
    if crash >= crash_limit then
      quarantined = 1
      finalize(P, id, j, 'quarantined', now)
      if j.fp ~= '' then quarantine(P, j.fp, id) end
    else
      schedule(P, id, j, 'retryable', now + backoff(crash, base, cap))
    end
    reply[#reply + 1] = { id, j.fp, crash, quarantined }
  end
end
flush_counts(P)
return reply
