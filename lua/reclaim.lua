--[[
reclaim.lua: applies LeaseLost to jobs whose lease expired.

Each such job: crash_attempt+1 (attempts are not spent), the crash is charged to the step
in progress, and at the crash limit the job is quarantined and its fingerprint recorded,
which blocks new enqueues and admission of its siblings until an operator releases it.
Otherwise the job is retryable after backoff on its crash count, from a base of its own
(policy crash_base, short: a lost lease is most often a dead host, not the job), jittered
per job (lib.lua crash_backoff) so that jobs that crashed together come back apart. Each
reclaim appends a lease_lost entry to the job's error history; a quarantined job is never
evicted (it waits for an operator).

All reads come first (the policy, the expired leases, each job); the writes follow.

KEYS[1]  namespace prefix; derived keys (lib.lua): leases, job:<id>, errors:<id>,
         scheduled, retained, quarantine, unique, policy, clock, q:<queue>:counts
ARGV[1]  limit: the most jobs reclaimed in this call
ARGV[2]  crash limit: the default when the policy has no crash_limit
ARGV[3]  crash backoff base ms: the default when the policy has no crash_base
ARGV[4]  backoff cap ms: the default when the policy has no retry_cap
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
local limit = tonumber(ARGV[1])
local now = now_ms(P)
local pol = load_policy(P, { crash_limit = tonumber(ARGV[2]), crash_base = tonumber(ARGV[3]),
  retry_cap = tonumber(ARGV[4]) })
local reply = { OK }

-- 1. reads
local expired = rcall('ZRANGEBYSCORE', K.leases(P), '-inf', now, 'LIMIT', 0, limit)
local jobs = {}
for i, id in ipairs(expired) do jobs[i] = load_job(P, id) end

-- 2. writes
for i, id in ipairs(expired) do
  local j = jobs[i]
  drop_lease(P, id)
  if j and j.state == 'running' then
    j.crash = j.crash + 1
    local jk = K.job(P, id)
    rcall('HSET', jk, 'crash', j.crash)
    if j.step ~= '' then rcall('HINCRBY', jk, 'crash:' .. j.step, 1) end
    local quarantined, state = 0, 'retryable'
    if j.crash >= pol.crash_limit then
      quarantined, state = 1, 'quarantined'
      finalize(P, id, j, 'quarantined', now)
      if j.fp ~= '' then quarantine(P, j.fp, id) end
    else
      schedule(P, id, j, 'retryable', now + crash_backoff(id, j.crash, pol.crash_base, pol.retry_cap))
    end
    local msg = 'lease expired'
    if j.step ~= '' then msg = 'lease expired in step ' .. j.step end
    push_error(P, id, j, { outcome = 'lease_lost', state = state, msg = msg }, now)
    reply[#reply + 1] = { id, j.fp, j.crash, quarantined }
  end
end
flush_counts(P)
return reply
