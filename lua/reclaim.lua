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

All reads come first (the policy, the expired leases, each job) with a check of every
structure the writes touch; the writes follow. A job whose data is unusable (its hash not
a hash, a numeric field unparseable or impossible) is parked (Store.CorruptJobs) and
leaves the leases; the others are reclaimed. An unusable structure (leases, scheduled,
counts, policy, ...) refuses the call with CorruptError before any write.

KEYS[1]  namespace prefix; derived keys (lib.lua): leases, job:<id>, errors:<id>,
         scheduled, retained, quarantine, unique, policy, corrupt, clock, q:<queue>:counts, counters
         (reclaimed, and failed:<queue>: lib.lua count_outcome)
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
--- @include drop_lease
--- @include finalize
--- @include schedule
--- @include crash_backoff
--- @include load_policy_checked
--- @include need
--- @include structure_error
--- @include JOB_FIELDS
--- @include K.scheduled
--- @include load_job_checked
--- @include MAX_SAFE
--- @include K.corrupt
--- @include need_counts
--- @include K.unique
--- @include K.retained
--- @include K.quarantine
--- @include history_ok
--- @include park_corrupt
--- @include count_event
--- @include count_outcome
--- @include flush_outcomes
local P = KEYS[1]
local limit = tonumber(ARGV[1])
local now = now_ms(P)
local pol, bad = load_policy_checked(P, { crash_limit = tonumber(ARGV[2]), crash_base = tonumber(ARGV[3]),
  retry_cap = tonumber(ARGV[4]) })
if not pol then return bad end
if not need(K.leases(P), 'zset') then return structure_error() end

-- 1. reads, and the check of every structure the writes touch. A job whose own data is
-- unusable is parked (it leaves the leases); an unusable structure refuses the call.
local FIELDS = {}
for _, f in ipairs(JOB_FIELDS) do FIELDS[#FIELDS + 1] = f end
FIELDS[#FIELDS + 1] = 'errb'
local expired = rcall('ZRANGEBYSCORE', K.leases(P), '-inf', now, 'LIMIT', 0, limit)
local jobs, parked = {}, {}
need(K.scheduled(P), 'zset')
for i, id in ipairs(expired) do
  local j, why = load_job_checked(P, id, FIELDS)
  if not why and j and j.state == 'running' and j.step ~= '' then
    -- The step's crash count takes HINCRBY: it must be an integer.
    local c = rcall('HGET', K.job(P, id), 'crash:' .. j.step)
    if c and not (string.match(c, '^%d+$') and tonumber(c) <= MAX_SAFE) then
      why = 'crash:' .. j.step .. ' is not a count: ' .. string.sub(c, 1, 64)
    end
  end
  if why then
    parked[i] = why
    need(K.corrupt(P), 'hash')
  elseif j and j.state == 'running' then
    jobs[i] = j
    need_counts(P, j.queue)
    if j.ukey ~= '' then need(K.unique(P), 'hash') end
    if j.crash + 1 >= pol.crash_limit then
      need(K.retained(P), 'zset')
      need(K.quarantine(P), 'hash')
    end
    j.history = history_ok(P, id)
  end
end
bad = structure_error()
if bad then return bad end

-- 2. writes
local reply = { OK }
for i, id in ipairs(expired) do
  local j = jobs[i]
  if parked[i] then
    rcall('ZREM', K.leases(P), id)
    park_corrupt(P, id, parked[i])
  else
    drop_lease(P, id)
  end
  if j then
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
    if j.history then push_error(P, id, j, { outcome = 'lease_lost', state = state, msg = msg }, now) end
    reply[#reply + 1] = { id, j.fp, j.crash, quarantined }
    -- A lost lease is a failed attempt in the queue's throughput (failed:<queue>).
    count_outcome(j.queue, 'lease_lost', state)
  end
end
flush_counts(P)
flush_outcomes(P)
count_event(P, 'reclaimed', #reply - 1)
return reply
