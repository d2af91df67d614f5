--[[
wf_remove_workloop.lua: deletes a workloop's row and its index entries.

KEYS[1]  namespace prefix; derived keys (lib.lua): loops, loopidx, loopdue
ARGV[1]  workloop id
Replies  {0, 1} removed | {0, 0} absent
Cost     O(log N)
]]
--- @include rcall
--- @include OK
--- @include K.workloops
--- @include K.workloop_index
--- @include K.workloops_due
local P = KEYS[1]
local id = ARGV[1]
local n = rcall('HDEL', K.workloops(P), id)
rcall('ZREM', K.workloop_index(P), id)
rcall('ZREM', K.workloops_due(P), id)
return { OK, n }
