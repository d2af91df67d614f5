--[[
wf_delete_worker_deployment.lua: deletes a worker deployment, decodable or not, and
returns what was stored; the per-version counts (verdeploys) drop its versions.

KEYS[1]  namespace prefix; derived keys (lib.lua): deploys, deployidx, verdeploys
ARGV[1]  deployment name
Replies  {0, 1, row} deleted | {0, 0} absent | {-9, key, why} corrupt
Cost     O(log N + versions)
]]
--- @include rcall
--- @include OK
--- @include K.deployments
--- @include K.deployment_index
--- @include need
--- @include structure_error
--- @include K.version_deployments
--- @include deployment_count
local P = KEYS[1]
local name = ARGV[1]
need(K.version_deployments(P), 'hash')
local bad = structure_error()
if bad then return bad end
local prev = rcall('HGET', K.deployments(P), name)
if not prev then return { OK, 0 } end
deployment_count(P, prev, -1)
rcall('HDEL', K.deployments(P), name)
rcall('ZREM', K.deployment_index(P), name)
return { OK, 1, prev }
