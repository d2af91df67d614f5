--[[
pause_schedule.lua: pauses a schedule (no tick fires) or resumes it.

A resume moves the mark to the store's now unless it is later: ticks that fell in the
pause never fire, whatever the misfire policy (a pause is the operator's choice, not a
miss). Either change takes the next revision, so a fire computed before it is refused.
Pausing a paused schedule or resuming an active one changes nothing.

KEYS[1]  namespace prefix; derived keys (lib.lua): cron:<name>, crondue, clock
ARGV[1]  schedule name
ARGV[2]  1 pause | 0 resume
Replies  {0, changed (0/1), revision}
         {-30}  ScheduleNotFound
         {-9, key, why}  a key of the schedule is unusable
Cost     O(log S), S the namespace's schedules
]]
--- @include rcall
--- @include K.schedule
--- @include K.schedules_due
--- @include OK
--- @include E_SCHEDULE_NOT_FOUND
--- @include now_ms
--- @include need
--- @include structure_error
local P = KEYS[1]
local name, pause = ARGV[1], ARGV[2] == '1'
local k = K.schedule(P, name)
local now = now_ms(P)
need(k, 'hash')
need(K.schedules_due(P), 'zset')
local bad = structure_error()
if bad then return bad end
local v = rcall('HMGET', k, 'paused', 'rev', 'mark')
if not v[2] then return { E_SCHEDULE_NOT_FOUND } end
if (v[1] == '1') == pause then return { OK, 0, tonumber(v[2]) } end

local rev = rcall('HINCRBY', k, 'rev', 1)
if pause then
  rcall('HSET', k, 'paused', 1)
  rcall('ZREM', K.schedules_due(P), name)
else
  rcall('HSET', k, 'paused', 0, 'mark', math.max(tonumber(v[3]) or 0, now))
  rcall('ZADD', K.schedules_due(P), now, name)
end
return { OK, 1, rev }
