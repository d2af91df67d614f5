--[[
wf_delete_worker_deployment.lua: deletes a worker deployment, decodable or not, and
returns what was stored.

KEYS[1]  namespace prefix; derived keys (lib.lua): deploys, deployidx
ARGV[1]  deployment name
Replies  {0, 1, row} deleted | {0, 0} absent
Cost     O(log N)
]]
--- @include rcall
--- @include OK
--- @include K.deployments
--- @include K.deployment_index
local P = KEYS[1]
local name = ARGV[1]
local prev = rcall('HGET', K.deployments(P), name)
if not prev then return { OK, 0 } end
rcall('HDEL', K.deployments(P), name)
rcall('ZREM', K.deployment_index(P), name)
return { OK, 1, prev }
