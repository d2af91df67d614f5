--[[
wf_set_namespace_placement.lua: sets the placement of a registered namespace (and bumps
its last-seen time); every other field stays. An absent name is not found, never minted.

KEYS[1]  registry prefix (hg:{registry}:); derived keys (lib.lua): nsrec:<name>, clock
ARGV[1]  namespace name
ARGV[2]  placement (JSON)
Replies  {0, 1} set | {0, 0} no such namespace
Cost     O(1)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include K.ns_record
local P = KEYS[1]
local rk = K.ns_record(P, ARGV[1])
if rcall('EXISTS', rk) == 0 then return { OK, 0 } end
rcall('HSET', rk, 'placement', ARGV[2], 'seen', now_ms(P))
return { OK, 1 }
