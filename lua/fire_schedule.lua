--[[
fire_schedule.lua: fires a schedule's ticks, on behalf of the holder of a fenced duty
lease: enqueues each tick's job (id cron:<name>:<tick>) and advances the schedule's mark.

Go computes the plan (which ticks fire, which are skipped, the new mark, the next due
time) from the schedule as it read it; this script applies it only to that same state:
  1. the duty lease is the caller's tenure (holder, fence) and live on the store clock,
     else DutyLost: a holder that lost its lease fires nothing;
  2. the schedule is at the plan's revision and mark and not paused, and every tick is
     after the mark, at or before now and in order, else ScheduleMoved: another firer
     was first, or an operator changed the schedule; the caller reads it again.
So two firers, or a stale one, can neither fire a tick twice nor move the mark back.
Each tick's job goes through the enqueue path's checks (schedule_job_verdict): an id
that exists as the same job is a replay, and a refusal (Backpressure, Quarantined, a
held unique key, an id taken by another job) is counted on the schedule with its reason
(refused, last_refused, last_refusal), never dropped silently. Every check comes before
the first write.

KEYS[1]  namespace prefix; derived keys (lib.lua): cron:<name>, crondue, duty:<duty>,
         and those of enqueue.lua for the jobs
ARGV[1..15]  the job template: kind, queue, partition, fingerprint, priority, sticky
         worker, retention ms, max attempts, schema version, weight, rate class, unique
         field ("" = none), unique window ms, tags ("\n"-joined), payload
ARGV[16] schedule name
ARGV[17] duty name
ARGV[18] duty holder
ARGV[19] duty fence
ARGV[20] revision the plan was computed from
ARGV[21] mark the plan was computed from (ms)
ARGV[22] new mark (ms)
ARGV[23] next due time (ms; 0 = no tick left)
ARGV[24] ticks skipped by the misfire policy
ARGV[25] latest skipped tick (ms; 0 = none)
ARGV[26] number of ticks n; then n groups of 2: tick ms, job id
Replies  {0, outcome_1, refusal_1, ..., refusal_n}: outcome "enqueued", "replayed" or
         "refused"; refusal the enqueue error reply as JSON ("" unless refused)
         {-33}  DutyLost
         {-32, revision, mark, paused}  ScheduleMoved
         {-30}  ScheduleNotFound
         {-9, key, why}  an unusable key; nothing written
Cost     O(n * log N)
]]
--- @include rcall
--- @include K.schedule
--- @include K.schedules_due
--- @include K.duty
--- @include OK
--- @include E_SCHEDULE_NOT_FOUND
--- @include E_SCHEDULE_MOVED
--- @include E_DUTY_LOST
--- @include now_ms
--- @include safe_hmget
--- @include need
--- @include structure_error
--- @include flush_counts
--- @include schedule_template
--- @include schedule_job_verdict
--- @include write_schedule_job
local P = KEYS[1]
local tpl = schedule_template(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8],
  ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13], ARGV[14], ARGV[15])
local name = ARGV[16]
local now = now_ms(P)

-- 1. The caller's tenure.
local d = safe_hmget(K.duty(P, ARGV[17]), 'holder', 'exp', 'fence')
if not d or d[1] ~= ARGV[18] or d[3] ~= ARGV[19] or (tonumber(d[2]) or 0) <= now then
  return { E_DUTY_LOST }
end

-- 2. The schedule, as the plan saw it.
local k = K.schedule(P, name)
need(k, 'hash')
need(K.schedules_due(P), 'zset')
local bad = structure_error()
if bad then return bad end
local s = rcall('HMGET', k, 'rev', 'mark', 'paused')
if not s[1] then return { E_SCHEDULE_NOT_FOUND } end
local mark = tonumber(s[2]) or 0
local new_mark = tonumber(ARGV[22])
local moved = s[1] ~= ARGV[20] or s[2] ~= ARGV[21] or s[3] == '1' or new_mark < mark
local n = tonumber(ARGV[26])
local ticks = {}
local last = mark
for i = 1, n do
  local b = 26 + (i - 1) * 2
  local t = tonumber(ARGV[b + 1])
  if t <= last or t > now or t > new_mark then moved = true end
  last = t
  ticks[i] = { t = t, id = ARGV[b + 2] }
end
if moved then return { E_SCHEDULE_MOVED, tonumber(s[1]), mark, tonumber(s[3]) or 0 } end

-- 3. Each tick's job, checked as enqueue checks it.
local call = { unique = {}, incoming = {} }
local jobs = {}
for i, tk in ipairs(ticks) do
  local e = {}
  for f, v in pairs(tpl) do e[f] = v end
  e.id, e.sched = tk.id, tk.t
  local verdict, reply = schedule_job_verdict(P, e, now, call)
  if verdict == 'corrupt' then return reply end
  jobs[i] = { e = e, verdict = verdict, reply = reply }
end
bad = structure_error()
if bad then return bad end

-- 4. Writes.
local out = { OK }
local fired, refused = 0, 0
for _, j in ipairs(jobs) do
  if j.verdict == 'new' then
    write_schedule_job(P, j.e, now)
    fired = fired + 1
    rcall('HSET', k, 'last_tick', j.e.sched, 'last_job', j.e.id)
    out[#out + 1] = 'enqueued'
    out[#out + 1] = ''
  elseif j.verdict == 'replayed' then
    out[#out + 1] = 'replayed'
    out[#out + 1] = ''
  else
    refused = refused + 1
    local why = cjson.encode(j.reply)
    rcall('HSET', k, 'last_refused', j.e.sched, 'last_refusal', why)
    out[#out + 1] = 'refused'
    out[#out + 1] = why
  end
end
if fired > 0 then rcall('HINCRBY', k, 'fired', fired) end
if refused > 0 then rcall('HINCRBY', k, 'refused', refused) end
local skipped = tonumber(ARGV[24])
if skipped > 0 then
  rcall('HINCRBY', k, 'skipped', skipped)
  rcall('HSET', k, 'last_skipped', ARGV[25])
end
rcall('HSET', k, 'mark', ARGV[22])
if ARGV[23] ~= '0' then
  rcall('ZADD', K.schedules_due(P), ARGV[23], name)
else
  rcall('ZREM', K.schedules_due(P), name)
end
flush_counts(P)
return out
