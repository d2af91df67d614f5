--[[
wf_remove_visibility.lua: removes a workflow's visibility row, guarded by run id: only the
named run's row goes, so a prune racing a newer run's upsert deletes nothing.

KEYS[1]  namespace prefix; derived keys (lib.lua): vis:<id>,
         visq:{all,type:<t>,status:<s>,ts:<s>:<t>,parent:<p>}
ARGV[1]  workflow id
ARGV[2]  run id
Replies  {0, 1} removed | {0, 0} no row of that run
Cost     O(log N): up to 5 ZREM
]]
--- @include rcall
--- @include OK
--- @include K.vis
--- @include K.vis_index
--- @include listing_move
local P = KEYS[1]
local id = ARGV[1]
local vk = K.vis(P, id)
local cur = rcall('HMGET', vk, 'run', 'started', 'type', 'status', 'parent')
if cur[1] ~= ARGV[2] then return { OK, 0 } end
rcall('DEL', vk)
listing_move(P, K.vis_index, id, { started = tonumber(cur[2]), type = cur[3], status = cur[4], parent = cur[5] }, nil)
return { OK, 1 }
