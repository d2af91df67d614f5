--[[
wf_put_workloop.lua: stores a workloop's row and indexes its next check time, so the due
sweep reads due rows only. Rows whose bytes carry no next check (or are undecodable) are
never due, but stay listed.

KEYS[1]  namespace prefix; derived keys (lib.lua): loops, loopidx, loopdue
ARGV[1]  workloop id
ARGV[2]  row bytes
ARGV[3]  next check (ms) or '' for none
Replies  {0}
Cost     O(log N)
]]
--- @include rcall
--- @include OK
--- @include K.workloops
--- @include K.workloop_index
--- @include K.workloops_due
local P = KEYS[1]
local id = ARGV[1]
rcall('HSET', K.workloops(P), id, ARGV[2])
rcall('ZADD', K.workloop_index(P), '0', id)
if ARGV[3] == '' then
  rcall('ZREM', K.workloops_due(P), id)
else
  rcall('ZADD', K.workloops_due(P), ARGV[3], id)
end
return { OK }
