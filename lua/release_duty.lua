--[[
release_duty.lua: gives up a duty, if this holder still has it. The duty's fence stays,
so the next tenure's fence is higher. A duty key that is not a hash is held by nobody
and left alone.

KEYS[1]  namespace prefix; derived keys (lib.lua): duty:<name>
ARGV[1]  duty name
ARGV[2]  holder id
Replies  {0, 1} released | {0, 0} not held by this holder
Cost     O(1)
]]
--- @include rcall
--- @include K.duty
--- @include OK
--- @include safe_hmget
local P = KEYS[1]
local k = K.duty(P, ARGV[1])
local v = safe_hmget(k, 'holder')
if not v or v[1] ~= ARGV[2] then return { OK, 0 } end
rcall('HDEL', k, 'holder', 'exp')
return { OK, 1 }
