--[[
release_duty.lua: gives up a duty, if this holder still has it.

KEYS[1]  namespace prefix; derived keys (lib.lua): duty:<name>
ARGV[1]  duty name
ARGV[2]  holder id
Replies  {0, 1} released | {0, 0} not held by this holder
Cost     O(1)
]]
--- @include rcall
--- @include K.duty
--- @include OK
local P = KEYS[1]
local k = K.duty(P, ARGV[1])
if rcall('HGET', k, 'holder') ~= ARGV[2] then return { OK, 0 } end
rcall('DEL', k)
return { OK, 1 }
