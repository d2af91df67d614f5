--[[
retry.lua: an operator retries a finished job (archived, undecodable, cancelled,
quarantined, or completed and retained). It becomes available now, or scheduled at a
given time, on its queue, optionally with an edit of its fields. Its failed and crashed
attempts and its snoozes start again from zero unless kept. It leaves the retained index.
A completed job's result goes: it was the result of the run the retry supersedes, and
the job's next success stores its own (or none).

Everything is checked before the first write: a strict unique key the job held must be
free or still its own (then it is taken again), else Duplicate naming the holder; the
queue's limit on unfinished jobs applies as to an enqueue of one. A quarantined job's
fingerprint stays quarantined (the job is then held with its siblings) unless `lift` is
set: then the fingerprint is lifted and the caller releases the held siblings
(release_quarantine.lua). A job whose own data is corrupt is parked, as cancel.lua does.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, result:<id>, scheduled, leases, retained,
         unique, quarantine, held:<fp>, limits, clock, corrupt,
         q:<queue>:{counts,ring,drr,p:<part>,wake}, q:<queue>:w:<worker>:{ring,drr,p:<part>}
ARGV[1]  job id
ARGV[2]  run at, ms (0 = now)
ARGV[3]  keep attempts (0/1)
ARGV[4]  lift the fingerprint's quarantine (0/1)
ARGV[5]  edit mask (EDIT_* bits of lib.lua)
ARGV[6]  payload
ARGV[7]  priority
ARGV[8]  max attempts
ARGV[9]  partition
ARGV[10] tags ("\n"-joined)
Replies  {0, state, scheduled_at ms, lifted 0/1, fingerprint} | {0, 'parked', why} the job's data is
         corrupt: parked | {-7} not found | {-10, state} not retryable |
         {-2, holder id, 0, holder state, holder scheduled_at} Duplicate |
         {-4, queue, limit, current, 1} Backpressure | {-9, key, why} Corrupt
Cost     O(log N)
]]
--- @include rcall
--- @include K.job
--- @include K.result
--- @include K.scheduled
--- @include K.retained
--- @include K.unique
--- @include K.quarantine
--- @include K.held
--- @include K.limits
--- @include K.wake
--- @include K.counts
--- @include OK
--- @include E_NOT_FOUND
--- @include E_NOT_RETRYABLE
--- @include E_DUPLICATE
--- @include E_BACKPRESSURE
--- @include corrupt_reply
--- @include now_ms
--- @include flush_counts
--- @include unfinished
--- @include partition_of
--- @include wake
--- @include load_job_checked
--- @include JOB_FIELDS
--- @include counts_ok
--- @include first_bad_key
--- @include edit_has
--- @include EDIT_PARTITION
--- @include apply_edit
--- @include schedule
--- @include make_available
--- @include park_unreadable_job
local P = KEYS[1]
local id, at, keep, lift = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', ARGV[4] == '1'
local e = { mask = tonumber(ARGV[5]), payload = ARGV[6], prio = ARGV[7], maxa = ARGV[8], part = ARGV[9], tags = ARGV[10] }
local RETRYABLE = { archived = true, undecodable = true, cancelled = true, quarantined = true, completed = true }

local j, why = load_job_checked(P, id, JOB_FIELDS)
if why then return park_unreadable_job(P, id, why) end
if not j then return { E_NOT_FOUND } end
if not RETRYABLE[j.state] then return { E_NOT_RETRYABLE, j.state } end

-- Every key the writes below touch, checked before the first of them.
local now = now_ms(P)
if not counts_ok(P, j.queue) then return corrupt_reply(K.counts(P, j.queue), 'is not a hash of integer counts') end
local part = j.part
if edit_has(e.mask, EDIT_PARTITION) then part = e.part end
local pz, ring, rs = partition_of(P, j.queue, j.sticky, part)
local checks = { { K.limits(P), 'hash' }, { K.unique(P), 'hash' }, { K.quarantine(P), 'hash' },
  { K.retained(P), 'zset' }, { K.scheduled(P), 'zset' }, { pz, 'zset' }, { ring, 'zset' }, { rs, 'hash' },
  { K.wake(P, j.queue), 'list' } }
if j.fp ~= '' then checks[#checks + 1] = { K.held(P, j.fp), 'set' } end
local bad, bad_why = first_bad_key(checks)
if bad then return corrupt_reply(bad, bad_why) end

local strict = j.ukey ~= '' and j.uwin == 0
if strict then
  local hid = rcall('HGET', K.unique(P), j.ukey)
  if hid and hid ~= id then
    local hs = rcall('HMGET', K.job(P, hid), 'state', 'sched')
    return { E_DUPLICATE, hid, 0, hs[1] or 'deleted', hs[2] or 0 }
  end
end
local limit = rcall('HGET', K.limits(P), j.queue)
if limit then
  limit = tonumber(limit)
  local current = unfinished(P, j.queue)
  if current + 1 > limit then return { E_BACKPRESSURE, j.queue, limit, current, 1 } end
end

-- The writes.
local lifted = 0
if lift and j.fp ~= '' and rcall('HEXISTS', K.quarantine(P), j.fp) == 1 then
  rcall('HDEL', K.quarantine(P), j.fp)
  lifted = 1
end
rcall('ZREM', K.retained(P), id)
if j.state == 'completed' and j.aux == '1' then rcall('DEL', K.result(P, id)) end
apply_edit(P, id, j, e)
local k = K.job(P, id)
rcall('HDEL', k, 'fin')
if not keep then
  rcall('HDEL', k, 'attempt', 'crash', 'snz')
  j.attempt, j.crash = 0, 0
end
if strict then rcall('HSET', K.unique(P), j.ukey, id) end
local state, sched = 'available', now
if at > now then
  state, sched = 'scheduled', at
  schedule(P, id, j, 'scheduled', at)
else
  j.sched = now
  make_available(P, id, j, now)
  wake(P, j.queue)
end
flush_counts(P)
return { OK, state, sched, lifted, j.fp }
