--[[
wf_deprecate_namespace.lua: marks a registered namespace deprecated. Idempotent; an absent
name is a no-op (deprecation never mints a record).

KEYS[1]  registry prefix (hg:{registry}:); derived keys (lib.lua): nsrec:<name>
ARGV[1]  namespace name
Replies  {0}
Cost     O(1)
]]
--- @include rcall
--- @include OK
--- @include K.ns_record
local P = KEYS[1]
local rk = K.ns_record(P, ARGV[1])
if rcall('EXISTS', rk) == 1 then rcall('HSET', rk, 'state', 'deprecated') end
return { OK }
