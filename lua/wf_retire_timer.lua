--[[
wf_retire_timer.lua: retires one arming of a workflow's timer. Only the arming the caller
names (same fire time and armed seq) is removed; a timer re-armed since, at another time
or at the same time by a newer event, is the replacement's claim to fire and stays
(superseded). An absent timer has nothing left to retire (retired).

KEYS[1]  namespace prefix; derived keys (lib.lua): timers, wftimers:<workflow id>
ARGV[1]  workflow id
ARGV[2]  timer id
ARGV[3]  fire time (ms)
ARGV[4]  armed seq
Replies  {0, 'retired'} | {0, 'superseded'}
Cost     O(log N)
]]
--- @include OK
--- @include wf_retire_timer
local P = KEYS[1]
return { OK, wf_retire_timer(P, ARGV[1], ARGV[2], ARGV[3], ARGV[4]) }
