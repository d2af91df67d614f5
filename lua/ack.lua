--[[
ack.lua: holders report how attempts ended, n at a time; each ack stands alone.

Only the holder may ack: the job is running under the same lease id and fence, else
LeaseRejected and nothing changes for that job (a second ack of one job in a batch is
rejected: the first moved it). A repeat of an applied ack (the same lease, fence and
outcome, resent by a client that lost the reply) changes nothing and reports the state
the job is in, as the first did (see repeated below). Outcomes:
  success       strict unique key released; retention 0 deletes the job, else completed
                (with the result, when one is given) and evicted after retention
  retry         attempt+1; retryable at now + delay (or exponential backoff), archived
                when attempts are spent
  skip          archived
  undecodable   undecodable
  revoke        deleted
  snooze        snoozes+1; scheduled at now + delay, no attempt spent. Past the policy's
                snooze_limit it is a failed attempt instead: retry with backoff, error
                "snoozed more than <limit> times"
  rate_limited  available again at once, route kept, no counter moves
  hand_back     the same, for a worker that shuts down; recorded in the history
An actual weight >= 0 trues up the rate class charged at admission. Archived and
undecodable jobs are evicted after the namespace policy's retention (lib.lua finalize).
Every failure (and every ack with logs, and every hand-back) appends one entry to the
job's error history (lib.lua push_error), with the outcome as applied ("archived" when the
last retry archived).

All reads come first (the policy, each job, its rate bucket); the writes follow.

An ack without a detail group has no error, delay, actual weight, result, logs or stack:
each argument costs a call about 800 Redis instructions, so a plain ack sends 4, not 11.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, errors:<id>, result:<id>,
         output:<id>, progress:<id>, admission:<lease id>, leases, scheduled, retained, unique, policy,
         quarantine, held:<fp>, rate:<class>, clock, q:<queue>:{counts,ring,drr,p:<part>,wake},
         q:<queue>:w:<worker>:{ring,drr,p:<part>}, counters (lease rejections, and
         completed:<queue> and failed:<queue>: lib.lua count_outcome)
ARGV[1]  retry backoff base ms: the default when the policy has no retry_base
ARGV[2]  retry backoff cap ms: the default when the policy has no retry_cap
ARGV[3]  number of acks n
ARGV[4]  detail groups m (0 when no ack of the batch has details, the common case)
         then n groups of 4: job id, lease id, fence,
         outcome: success | retry | skip | undecodable | revoke | snooze | rate_limited |
                  hand_back;
         then m detail groups of 8: which ack (1..n, each at most once), error text ("" =
         none), delay ms (retry: 0 = backoff; snooze: > 0), actual weight (-1 = not
         reported), result schema version (0 = no result), result bytes, attempt logs (a
         JSON array of strings, "" = none), panic stack ("" = none)
Replies  {0, ack_1, ..., ack_n}: each the state after the ack ("deleted" when gone), a
         bare string (a table per ack costs Redis its making and its reply); or {-5}
         LeaseRejected; or {-9, job key, why} the job's data is corrupt, the job parked
Cost     O(n * log N)
]]
--- @include rcall
--- @include K.job
--- @include K.result
--- @include K.leases
--- @include OK
--- @include E_LEASE_REJECTED
--- @include now_ms
--- @include flush_counts
--- @include mark_aux
--- @include push_error
--- @include wake
--- @include JOB_FIELDS
--- @include release_unique
--- @include backoff
--- @include drop_lease
--- @include finalize
--- @include delete_job
--- @include deleted_keys
--- @include flush_deleted
--- @include arg_int
--- @include schedule
--- @include make_available
--- @include true_up
--- @include load_policy_checked
--- @include need
--- @include load_job_checked
--- @include safe_hmget
--- @include job_int
--- @include JOB_STATES
--- @include QUEUE_DEFAULT
--- @include K.corrupt
--- @include key_ok
--- @include K.rate
--- @include load_bucket
--- @include need_counts
--- @include K.unique
--- @include K.retained
--- @include K.scheduled
--- @include need_available
--- @include history_ok
--- @include structure_error
--- @include park_corrupt
--- @include E_CORRUPT
--- @include count_event
--- @include admission_record
--- @include count_outcome
--- @include flush_outcomes
local P = KEYS[1]
local n, m = tonumber(ARGV[3]), tonumber(ARGV[4])
local F = 4
local known = { success = true, retry = true, skip = true, undecodable = true, revoke = true,
  snooze = true, rate_limited = true, hand_back = true }
local acks = {}
for i = 1, n do
  local b = 4 + (i - 1) * F
  local a = { id = ARGV[b + 1], lease = ARGV[b + 2], fence = ARGV[b + 3], outcome = ARGV[b + 4],
    err = '', delay = 0, actual = -1, result_schema = 0, result_bytes = '', stack = '' }
  if not known[a.outcome] then return redis.error_reply('headgate: unknown outcome ' .. tostring(a.outcome)) end
  acks[i] = a
end
local D = 8
for k = 1, m do
  local d = 4 + n * F + (k - 1) * D
  local a = acks[tonumber(ARGV[d + 1])]
  if not a or a.detailed then return redis.error_reply('headgate: ack detail for no ack: ' .. tostring(ARGV[d + 1])) end
  a.detailed = true
  a.err, a.delay, a.actual = ARGV[d + 2], arg_int(ARGV[d + 3]), tonumber(ARGV[d + 4])
  a.result_schema, a.result_bytes, a.stack = arg_int(ARGV[d + 5]), ARGV[d + 6], ARGV[d + 8]
  if ARGV[d + 7] ~= '' then
    local ok, logs = pcall(cjson.decode, ARGV[d + 7])
    if not ok or type(logs) ~= 'table' then return redis.error_reply('headgate: ack logs are not a JSON array') end
    if #logs > 0 then a.logs = logs end
  end
end
local now = now_ms(P)
local pol, bad = load_policy_checked(P, { retry_base = tonumber(ARGV[1]), retry_cap = tonumber(ARGV[2]) })
if not pol then return bad end

-- 1. reads, and the check of every structure the writes touch. Success and revoke, the
-- common outcomes, need only the fields load_ending reads: each field read costs, so the
-- rest is read only when needed. A job whose own data is unusable is parked; a structure
-- that is unusable refuses the whole call before any write.
-- Each list ends with what index_move files the job under (INDEX_FIELDS), so that moving
-- its index entries reads nothing more.

-- load_job_checked(P, id, {'state', 'lease', 'fence', 'queue', 'ret', 'ukey', 'uwin',
-- 'aux', 'kind', 'part', 'tags', 'fp'}) for the common ack, its job made by one table
-- constructor: a table filled field by field is rehashed four times on its way to twelve.
local function load_ending(id)
  local v, why = safe_hmget(K.job(P, id), 'state', 'lease', 'fence', 'queue', 'ret', 'ukey', 'uwin', 'aux',
    'kind', 'part', 'tags', 'fp')
  if not v then return nil, why end
  local state, fence, ret, uwin = v[1], v[3], v[5], v[7]
  if fence then
    fence, why = job_int('fence', fence)
    if not fence then return nil, why end
  end
  if ret then
    ret, why = job_int('ret', ret)
    if not ret then return nil, why end
  end
  if uwin then
    uwin, why = job_int('uwin', uwin)
    if not uwin then return nil, why end
  end
  if not state or state == '' then return nil, nil end
  if not JOB_STATES[state] then return nil, 'state is ' .. string.sub(state, 1, 64) end
  return { state = state, lease = v[2] or '', fence = fence or 0, ret = ret or 0, ukey = v[6] or '', uwin = uwin or 0,
    aux = v[8] or '', kind = v[9] or '', part = v[10] or '', tags = v[11] or '', fp = v[12] or '',
    queue = v[4] or QUEUE_DEFAULT }
end
local ALL_FIELDS = {}
for _, f in ipairs(JOB_FIELDS) do ALL_FIELDS[#ALL_FIELDS + 1] = f end
ALL_FIELDS[#ALL_FIELDS + 1] = 'errb'
ALL_FIELDS[#ALL_FIELDS + 1] = 'kind'
ALL_FIELDS[#ALL_FIELDS + 1] = 'tags'
local accepted = {}

-- The states each outcome leaves a job in (a success at retention 0 and a revoke delete it).
local ENDS = { success = { completed = true }, retry = { retryable = true, archived = true },
  skip = { archived = true }, undecodable = { undecodable = true },
  snooze = { scheduled = true, retryable = true, archived = true },
  rate_limited = { available = true }, hand_back = { available = true }, revoke = {} }

-- A repeat of an ack Redis applied (go-redis resends a script whose reply a broken
-- connection lost): the job is no longer running, but its attempt under this fence ended
-- in a state this outcome leads to; or it is gone, the outcome deletes, and the admission
-- under this lease (its record lasts the lease duration) leased it at this fence. Returns
-- the state to report (kept in a.repeated), else nil: a rejection. What the store cannot
-- tell from a repeat is a job an operator deleted, or ReclaimExpired moved to the same
-- state, before the ack came: the reply then names the state the job is in, the one the
-- ack asked for.
local function repeated(a, j)
  local fence = tonumber(a.fence)
  if j then
    if j.fence == fence and ENDS[a.outcome][j.state] then a.repeated = j.state end
    return a.repeated
  end
  if a.outcome ~= 'success' and a.outcome ~= 'revoke' then return nil end
  for _, e in ipairs(admission_record(P, a.lease) or {}) do
    if e[1] == a.id and e[2] == fence then a.repeated = 'deleted' end
  end
  return a.repeated
end

local buckets = {} -- rate class -> its bucket (false: unconfigured or unusable), shared by the batch
local parks = {}
local counts_q = nil -- the queue need_counts checked last: a batch's jobs mostly share one
need(K.leases(P), 'zset')
for i = 1, n do
  local a = acks[i]
  local fields = ALL_FIELDS
  local ends = a.outcome == 'success' or a.outcome == 'revoke'
  if ends then
    fields = nil -- load_ending's
    if a.actual >= 0 or a.logs then
      fields = { 'state', 'lease', 'fence', 'queue', 'ret', 'ukey', 'uwin', 'aux', 'kind', 'part', 'tags', 'fp',
        'charge', 'rc', 'errb', 'attempt', 'crash' }
    end
  end
  local j, why = nil, nil
  if accepted[a.id] then
    -- a second ack of the job in the batch: rejected below
  elseif fields then
    j, why = load_job_checked(P, a.id, fields)
  else
    j, why = load_ending(a.id)
  end
  if why then
    a.corrupt = why
    parks[#parks + 1] = a
    need(K.corrupt(P), 'hash')
    accepted[a.id] = true
  elseif not accepted[a.id] and not (j and j.state == 'running') and repeated(a, j) then
    accepted[a.id] = true
  elseif j and j.state == 'running' and j.lease == a.lease and j.fence == tonumber(a.fence) then
    accepted[a.id] = true
    if a.actual >= 0 and j.charge > 0 and j.rc ~= '' then
      if buckets[j.rc] == nil then
        -- An unusable bucket is not trued up: the job's ack matters more than the tokens.
        buckets[j.rc] = false
        if key_ok(K.rate(P, j.rc), 'hash') then buckets[j.rc] = load_bucket(P, j.rc, now) or false end
      end
      a.bucket = buckets[j.rc]
    end
    if j.queue ~= counts_q then
      need_counts(P, j.queue)
      counts_q = j.queue
    end
    if j.ukey ~= '' then need(K.unique(P), 'hash') end
    if not (a.outcome == 'revoke' or (a.outcome == 'success' and j.ret == 0)) then
      need(K.retained(P), 'zset')
      need(K.scheduled(P), 'zset')
      if a.outcome == 'rate_limited' or a.outcome == 'hand_back' then need_available(P, j) end
      if a.outcome == 'success' and a.result_schema > 0 then a.result_ok = key_ok(K.result(P, a.id), 'hash') end
      a.history = history_ok(P, a.id)
    end
    a.j = j
  end
end
bad = structure_error()
if bad then return bad end

-- 2. writes
local lapsed = {} -- leases of deleted jobs, removed together at the end

-- Records an entry in the job's history.
local function record(a, j, outcome, state, msg)
  if not a.history then return end
  push_error(P, a.id, j, { outcome = outcome, state = state, msg = msg, stack = a.stack, logs = a.logs }, now)
end

-- A failed attempt: retryable after delay (0 = backoff), archived when attempts are spent.
local function fail(a, j, outcome, msg, delay)
  j.attempt = j.attempt + 1
  rcall('HSET', K.job(P, a.id), 'attempt', j.attempt)
  if j.attempt < j.maxa then
    if delay <= 0 then delay = backoff(j.attempt, pol.retry_base, pol.retry_cap) end
    schedule(P, a.id, j, 'retryable', now + delay)
    record(a, j, outcome, 'retryable', msg)
    return 'retryable'
  end
  finalize(P, a.id, j, 'archived', now)
  record(a, j, outcome, 'archived', msg)
  return 'archived'
end

-- Applies one ack the holder made; returns the job's state after it.
local function apply(a, j)
  local id, outcome = a.id, a.outcome
  if a.actual >= 0 then true_up(P, id, j, a.actual, a.bucket or nil) end
  if outcome == 'revoke' or (outcome == 'success' and j.ret == 0) then
    lapsed[#lapsed + 1] = id
    if j.ukey ~= '' then release_unique(P, id, j) end
    delete_job(P, id, j)
    return 'deleted'
  end
  drop_lease(P, id, j.fp)
  if outcome == 'success' then
    finalize(P, id, j, 'completed', now)
    if a.result_schema > 0 and a.result_ok then
      mark_aux(P, id)
      rcall('HSET', K.result(P, id), 'schema', a.result_schema, 'bytes', a.result_bytes, 'fence', j.fence, 'at', now)
    end
    if a.logs then record(a, j, outcome, 'completed', '') end
    return 'completed'
  elseif outcome == 'retry' then
    return fail(a, j, outcome, a.err, a.delay)
  elseif outcome == 'skip' or outcome == 'undecodable' then
    local state = 'archived'
    if outcome == 'undecodable' then state = 'undecodable' end
    finalize(P, id, j, state, now)
    if a.err ~= '' or a.logs or a.stack ~= '' then record(a, j, outcome, state, a.err) end
    return state
  elseif outcome == 'snooze' then
    j.snz = j.snz + 1
    rcall('HSET', K.job(P, id), 'snz', j.snz)
    if j.snz > pol.snooze_limit then
      return fail(a, j, outcome, 'snoozed more than ' .. string.format('%d', pol.snooze_limit) .. ' times', 0)
    end
    schedule(P, id, j, 'scheduled', now + a.delay)
    if a.logs then record(a, j, outcome, 'scheduled', '') end
    return 'scheduled'
  end
  -- rate_limited, hand_back
  make_available(P, id, j, now)
  wake(P, j.queue)
  if outcome == 'hand_back' or a.logs then record(a, j, outcome, 'available', a.err) end
  return 'available'
end

for _, a in ipairs(parks) do
  rcall('ZREM', K.leases(P), a.id)
  park_corrupt(P, a.id, a.corrupt)
end
deleted_keys = {}
local reply = { OK }
for i = 1, n do
  local a = acks[i]
  if a.corrupt then
    reply[i + 1] = { E_CORRUPT, K.job(P, a.id), a.corrupt }
  elseif a.repeated then
    reply[i + 1] = a.repeated
  elseif a.j then
    local state = apply(a, a.j)
    reply[i + 1] = state
    count_outcome(a.j.queue, a.outcome, state)
  else
    reply[i + 1] = { E_LEASE_REJECTED }
    count_event(P, 'lease_rejected', 1)
  end
end
if #lapsed > 0 then rcall('ZREM', K.leases(P), unpack(lapsed)) end
flush_deleted()
flush_counts(P)
flush_outcomes(P)
return reply
