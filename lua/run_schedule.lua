--[[
run_schedule.lua: runs a schedule now, out of turn: enqueues its job with the id
cron:<name>:run:<now ms>, whether the schedule is paused or not. The mark does not move:
the schedule's own ticks fire as before.

The job goes through the enqueue path's checks (schedule_job_verdict) and a refusal is
the error enqueue would give; every check comes before the first write.

KEYS[1]  namespace prefix; derived keys (lib.lua): cron:<name>, clock, and those of
         enqueue.lua for the job
ARGV[1..15]  the job template, as fire_schedule.lua takes it
ARGV[16] schedule name
ARGV[17] revision the template was read at
Replies  {0, job id, "enqueued" | "replayed"}
         {-32, revision, mark, paused}  ScheduleMoved
         {-30}  ScheduleNotFound
         {-1, id} | {-2, ...} | {-3, fingerprint} | {-4, ...}  as enqueue.lua
         {-9, key, why}  an unusable key; nothing written
Cost     O(log N)
]]
--- @include rcall
--- @include K.schedule
--- @include OK
--- @include E_SCHEDULE_NOT_FOUND
--- @include E_SCHEDULE_MOVED
--- @include now_ms
--- @include need
--- @include structure_error
--- @include flush_counts
--- @include schedule_template
--- @include schedule_job_verdict
--- @include write_schedule_job
local P = KEYS[1]
local e = schedule_template(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8],
  ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13], ARGV[14], ARGV[15])
local name = ARGV[16]
local now = now_ms(P)
local k = K.schedule(P, name)
need(k, 'hash')
local bad = structure_error()
if bad then return bad end
local s = rcall('HMGET', k, 'rev', 'mark', 'paused')
if not s[1] then return { E_SCHEDULE_NOT_FOUND } end
if s[1] ~= ARGV[17] then return { E_SCHEDULE_MOVED, tonumber(s[1]), tonumber(s[2]) or 0, tonumber(s[3]) or 0 } end

e.id, e.sched = 'cron:' .. name .. ':run:' .. string.format('%d', now), now
local verdict, reply = schedule_job_verdict(P, e, now, { unique = {}, incoming = {} })
if verdict == 'corrupt' or verdict == 'refused' then return reply end
bad = structure_error()
if bad then return bad end
if verdict == 'replayed' then return { OK, e.id, 'replayed' } end
write_schedule_job(P, e, now)
rcall('HINCRBY', k, 'runs', 1)
flush_counts(P)
return { OK, e.id, 'enqueued' }
