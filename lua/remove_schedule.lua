--[[
remove_schedule.lua: removes a schedule. The jobs its ticks enqueued are ordinary jobs
and stay.

KEYS[1]  namespace prefix; derived keys (lib.lua): cron:<name>, cronnames, crondue
ARGV[1]  schedule name
Replies  {0}
         {-30}  ScheduleNotFound
         {-9, key, why}  a key of the schedule is unusable
Cost     O(log S), S the namespace's schedules
]]
--- @include rcall
--- @include K.schedule
--- @include K.schedules
--- @include K.schedules_due
--- @include OK
--- @include E_SCHEDULE_NOT_FOUND
--- @include need
--- @include structure_error
local P = KEYS[1]
local name = ARGV[1]
need(K.schedules(P), 'zset')
need(K.schedules_due(P), 'zset')
local bad = structure_error()
if bad then return bad end
if rcall('DEL', K.schedule(P, name)) == 0 then return { E_SCHEDULE_NOT_FOUND } end
rcall('ZREM', K.schedules(P), name)
rcall('ZREM', K.schedules_due(P), name)
return { OK }
