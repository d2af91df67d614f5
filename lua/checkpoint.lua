--[[
checkpoint.lua: the holder records the step in progress and the steps done.

The step in progress is what a crash is charged to (see reclaim.lua); the steps done are
what a later attempt skips. Crash counts per step are kept by the store, not written here.
A job whose data is corrupt is refused with nothing written.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>
ARGV[1]  job id
ARGV[2]  lease id
ARGV[3]  fence
ARGV[4]  step in progress ("" = none)
ARGV[5]  steps done, "\n"-joined
Replies  {0} | {-5} LeaseRejected | {-9, key, why} Corrupt
Cost     O(1)
]]
--- @include rcall
--- @include K.job
--- @include OK
--- @include held_job
local P = KEYS[1]
local id = ARGV[1]
local _, refused = held_job(P, id, ARGV[2], ARGV[3])
if refused then return refused end
rcall('HSET', K.job(P, id), 'step', ARGV[4], 'done', ARGV[5])
return { OK }
