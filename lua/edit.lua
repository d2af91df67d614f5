--[[
edit.lua: an operator changes fields of a job that is not running and not finished
(pending, scheduled, available, retryable): payload, priority, max attempts, scheduled
time, partition, tags. The job is filed again under what changed: an available job moves
to its new rank or partition (or, given a future time, becomes scheduled); a scheduled or
retryable job moves in the scheduled index, or, given a time that has come, becomes
available at once, as promote.lua would make it (so `headgate edit ID -at 0s` runs it now).
A past time is taken as now, as at an enqueue. A finished job is edited only as part of a
retry (retry.lua). A job whose own data is corrupt is parked, as cancel.lua does.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, scheduled, leases, held:<fp>,
         parked:<class>, quarantine, clock, corrupt, q:<queue>:{counts,ring,drr,p:<part>,wake},
         q:<queue>:w:<worker>:{ring,drr,p:<part>}
ARGV[1]  job id
ARGV[2]  edit mask (EDIT_* bits of lib.lua)
ARGV[3]  payload
ARGV[4]  priority
ARGV[5]  max attempts
ARGV[6]  scheduled at, ms
ARGV[7]  partition
ARGV[8]  tags ("\n"-joined)
Replies  {0, state, scheduled_at ms} | {0, 'parked', why} the job's data is corrupt:
         parked | {-7} not found | {-11} running | {-12, state} finished |
         {-9, key, why} Corrupt
Cost     O(log N)
]]
--- @include rcall
--- @include K.job
--- @include K.scheduled
--- @include K.held
--- @include K.parked
--- @include K.wake
--- @include K.quarantine
--- @include K.counts
--- @include OK
--- @include E_NOT_FOUND
--- @include E_JOB_RUNNING
--- @include E_NOT_EDITABLE
--- @include corrupt_reply
--- @include now_ms
--- @include flush_counts
--- @include partition_of
--- @include wake
--- @include unindex_available_job
--- @include load_job_checked
--- @include JOB_FIELDS
--- @include counts_ok
--- @include first_bad_key
--- @include edit_has
--- @include EDIT_SCHEDULED_AT
--- @include EDIT_PARTITION
--- @include apply_edit
--- @include schedule
--- @include make_available
--- @include park_unreadable_job
--- @include index_move
--- @include keep_created
local P = KEYS[1]
local id = ARGV[1]
local e = { mask = tonumber(ARGV[2]), payload = ARGV[3], prio = ARGV[4], maxa = ARGV[5], sched = tonumber(ARGV[6]),
  part = ARGV[7], tags = ARGV[8] }
local EDITABLE = { pending = true, scheduled = true, available = true, retryable = true }

local j, why = load_job_checked(P, id, JOB_FIELDS)
if why then return park_unreadable_job(P, id, why) end
if not j then return { E_NOT_FOUND } end
if j.state == 'running' then return { E_JOB_RUNNING } end
if not EDITABLE[j.state] then return { E_NOT_EDITABLE, j.state } end

-- Every key the writes below touch, checked before the first of them.
local now = now_ms(P)
if not counts_ok(P, j.queue) then return corrupt_reply(K.counts(P, j.queue), 'is not a hash of integer counts') end
local timed = edit_has(e.mask, EDIT_SCHEDULED_AT)
-- A time that has come means now, as at an enqueue: the job is due from the edit on,
-- not waiting since a past time (which the waits and the rank would count).
if timed and e.sched < now then e.sched = now end
local due = timed and e.sched <= now and (j.state == 'scheduled' or j.state == 'retryable')
local checks = { { K.scheduled(P), 'zset' } }
if j.state == 'available' or due then
  if j.fp ~= '' then checks[#checks + 1] = { K.held(P, j.fp), 'set' } end
  if j.parked ~= '' then checks[#checks + 1] = { K.parked(P, j.rc), 'zset' } end
  checks[#checks + 1] = { K.quarantine(P), 'hash' }
  checks[#checks + 1] = { K.wake(P, j.queue), 'list' }
  local parts = { j.part }
  if edit_has(e.mask, EDIT_PARTITION) then parts[2] = e.part end
  for _, part in ipairs(parts) do
    local pz, ring, rs = partition_of(P, j.queue, j.sticky, part)
    checks[#checks + 1] = { pz, 'zset' }
    checks[#checks + 1] = { ring, 'zset' }
    checks[#checks + 1] = { rs, 'hash' }
  end
end
local bad, bad_why = first_bad_key(checks)
if bad then return corrupt_reply(bad, bad_why) end

-- The writes.
if j.state == 'available' then
  unindex_available_job(P, id, j)
  j.held, j.parked = '', ''
  apply_edit(P, id, j, e)
  if timed and e.sched > now then
    schedule(P, id, j, 'scheduled', e.sched)
  else
    if timed then j.sched = e.sched end
    make_available(P, id, j, now)
    wake(P, j.queue)
  end
elseif due then
  apply_edit(P, id, j, e)
  index_move(P, id, j, j.state, j.state)
  rcall('ZREM', K.scheduled(P), id)
  j.sched = e.sched
  make_available(P, id, j, now)
  wake(P, j.queue)
else
  apply_edit(P, id, j, e)
  if timed then
    if j.state == 'pending' then
      keep_created(K.job(P, id))
      rcall('HSET', K.job(P, id), 'sched', e.sched)
    else
      schedule(P, id, j, j.state, e.sched)
    end
    j.sched = e.sched
  end
  index_move(P, id, j, j.state, j.state)
end
flush_counts(P)
local st = rcall('HMGET', K.job(P, id), 'state', 'sched')
return { OK, st[1], tonumber(st[2]) or 0 }
