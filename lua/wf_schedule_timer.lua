--[[
wf_schedule_timer.lua: arms a workflow's durable timer, replacing a prior arming of the
same timer id (its fire time and armed seq).

KEYS[1]  namespace prefix; derived keys (lib.lua): timers, wftimers:<workflow id>
ARGV[1]  workflow id
ARGV[2]  timer id
ARGV[3]  fire time (ms, store clock)
ARGV[4]  armed seq (the seq of the event that armed it)
Replies  {0}
Cost     O(log N)
]]
--- @include OK
--- @include wf_arm_timer
local P = KEYS[1]
wf_arm_timer(P, ARGV[1], ARGV[2], ARGV[3], ARGV[4])
return { OK }
