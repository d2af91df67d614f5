--[[
ack.lua: holders report how attempts ended, n at a time; each ack stands alone.

Only the holder may ack: the job is running under the same lease id and fence, else
LeaseRejected and nothing changes. Outcomes:
  success       strict unique key released; retention 0 deletes the job, else completed
                (with the result, when one is given) and evicted after retention
  retry         attempt+1; retryable at now + delay (or exponential backoff), archived
                when attempts are spent
  skip          archived
  undecodable   undecodable
  revoke        deleted
  snooze        scheduled at now + delay; no attempt spent
  rate_limited  available again at once, route kept, no counter moves
An actual weight >= 0 trues up the rate class charged at admission.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, errors:<id>, result:<id>,
         output:<id>, progress:<id>, leases, scheduled, retained, unique,
         quarantine, held:<fp>, rate:<class>, clock, q:<queue>:{counts,ring,drr,p:<part>,wake},
         q:<queue>:w:<worker>:{ring,drr,p:<part>}
ARGV[1]  retry backoff base ms
ARGV[2]  retry backoff cap ms
ARGV[3]  number of acks n; then n groups of 10:
         job id, lease id, fence,
         outcome: success | retry | skip | undecodable | revoke | snooze | rate_limited,
         error text ("" = none), delay ms (retry: 0 = backoff; snooze: > 0),
         actual weight (-1 = not reported), result schema version (0 = no result),
         result bytes, attempt logs (" | "-joined, "" = none)
Replies  {0, {code_1, state_1}, ..., {code_n, state_n}}: code 0 with the state after the
         ack ("deleted" when gone), or -5 LeaseRejected with ""
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
--- @include load_fields
--- @include release_unique
--- @include backoff
--- @include drop_lease
--- @include finalize
--- @include delete_job
--- @include schedule
--- @include make_available
--- @include true_up
--- @include holder
local P = KEYS[1]
local base, cap, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local F = 10
local known = { success = true, retry = true, skip = true, undecodable = true, revoke = true,
  snooze = true, rate_limited = true }
for i = 1, n do
  local outcome = ARGV[3 + (i - 1) * F + 4]
  if not known[outcome] then return redis.error_reply('headgate: unknown outcome ' .. tostring(outcome)) end
end
local now = now_ms(P)

local END_FIELDS = { 'state', 'lease', 'fence', 'queue', 'ret', 'ukey', 'aux' }
local lapsed = {} -- leases of deleted jobs, removed together at the end

-- Applies one ack; returns the job's state after it, or nil when the caller is not the holder.
local function ack(id, lease, fence, outcome, err, delay, actual, result_schema, result_bytes, logs)
  -- Success and revoke, the common outcomes, need only these fields.
  local fields = JOB_FIELDS
  if outcome == 'success' or outcome == 'revoke' then fields = END_FIELDS end
  local j = holder(P, id, lease, fence, fields)
  if not j then return nil end
  -- Each field read costs, so the common path reads the rest only when it needs them.
  if fields == END_FIELDS then
    if j.ukey ~= '' then load_fields(P, id, { 'uwin' }, j) else j.uwin = 0 end
    if actual >= 0 then load_fields(P, id, { 'charge', 'rc' }, j) end
  end
  true_up(P, id, j, actual, now)
  local logline = nil
  if logs ~= '' then logline = 'logs: ' .. logs end

  if outcome == 'revoke' or (outcome == 'success' and j.ret == 0) then
    lapsed[#lapsed + 1] = id
    release_unique(P, id, j)
    delete_job(P, id, j)
    return 'deleted'
  end
  drop_lease(P, id)
  if outcome == 'success' then
    finalize(P, id, j, 'completed', now)
    if result_schema > 0 then
      mark_aux(P, id)
      rcall('HSET', K.result(P, id), 'schema', result_schema, 'bytes', result_bytes, 'fence', j.fence, 'at', now)
    end
    if logline then push_error(P, id, 'success ' .. logline) end
    return 'completed'
  elseif outcome == 'retry' then
    local attempt = j.attempt + 1
    rcall('HSET', K.job(P, id), 'attempt', attempt)
    push_error(P, id, 'retry (attempt ' .. attempt .. '): ' .. err)
    if logline then push_error(P, id, logline) end
    if attempt < j.maxa then
      if delay <= 0 then delay = backoff(attempt, base, cap) end
      schedule(P, id, j, 'retryable', now + delay)
      return 'retryable'
    end
    finalize(P, id, j, 'archived', now)
    return 'archived'
  elseif outcome == 'skip' or outcome == 'undecodable' then
    local state = 'archived'
    if outcome == 'undecodable' then state = 'undecodable' end
    finalize(P, id, j, state, now)
    if err ~= '' then push_error(P, id, state .. ': ' .. err) end
    if logline then push_error(P, id, logline) end
    return state
  elseif outcome == 'snooze' then
    schedule(P, id, j, 'scheduled', now + delay)
    if logline then push_error(P, id, logline) end
    return 'scheduled'
  end
  -- rate_limited
  make_available(P, id, j, now)
  wake(P, j.queue)
  return 'available'
end

local reply = { OK }
for i = 1, n do
  local b = 3 + (i - 1) * F
  local state = ack(ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5],
    tonumber(ARGV[b + 6]), tonumber(ARGV[b + 7]), tonumber(ARGV[b + 8]), ARGV[b + 9], ARGV[b + 10])
  if state then
    reply[#reply + 1] = { OK, state }
  else
    reply[#reply + 1] = { E_LEASE_REJECTED, '' }
  end
end
if #lapsed > 0 then rcall('ZREM', K.leases(P), unpack(lapsed)) end
flush_counts(P)
return reply
