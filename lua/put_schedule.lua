--[[
put_schedule.lua: adds a schedule, or updates the definition of one, and has a worker
look at it at once.

An add starts the schedule's mark at the store's now: only ticks after the add fire. An
update keeps the mark (ticks after it fire under the new definition, as its misfire
policy says), keeps a pause, and takes the next revision, so a fire computed from the
old definition is refused.

KEYS[1]  namespace prefix; derived keys (lib.lua): cron:<name>, cronnames, crondue, clock
ARGV[1]  schedule name
ARGV[2]  definition (JSON, read by Go only)
ARGV[3]  "add" (refused when the name exists) or "update" (refused when it does not)
Replies  {0, revision}
         {-31}  ScheduleExists (add)
         {-30}  ScheduleNotFound (update)
         {-9, key, why}  a key of the schedule is unusable
Cost     O(log S), S the namespace's schedules
]]
--- @include rcall
--- @include K.schedule
--- @include K.schedules
--- @include K.schedules_due
--- @include OK
--- @include E_SCHEDULE_NOT_FOUND
--- @include E_SCHEDULE_EXISTS
--- @include now_ms
--- @include need
--- @include structure_error
local P = KEYS[1]
local name, add = ARGV[1], ARGV[3] == 'add'
local k = K.schedule(P, name)
local now = now_ms(P)
need(k, 'hash')
need(K.schedules(P), 'zset')
need(K.schedules_due(P), 'zset')
local bad = structure_error()
if bad then return bad end
local exists = rcall('EXISTS', k) == 1
if add and exists then return { E_SCHEDULE_EXISTS } end
if not add and not exists then return { E_SCHEDULE_NOT_FOUND } end

if add then
  rcall('HSET', k, 'def', ARGV[2], 'rev', 1, 'mark', now, 'paused', 0, 'created', now, 'updated', now)
  rcall('ZADD', K.schedules(P), 0, name)
  rcall('ZADD', K.schedules_due(P), now, name)
  return { OK, 1 }
end
local rev = rcall('HINCRBY', k, 'rev', 1)
rcall('HSET', k, 'def', ARGV[2], 'updated', now)
if rcall('HGET', k, 'paused') ~= '1' then rcall('ZADD', K.schedules_due(P), now, name) end
return { OK, rev }
