--[[
wf_write_raw_worker_deployment.lua: stores bytes as a worker deployment's row, bypassing
the record's encoding, so tests can pin how the store lists, replaces and deletes a
poisoned row.

KEYS[1]  namespace prefix; derived keys (lib.lua): deploys, deployidx
ARGV[1]  deployment name
ARGV[2]  bytes
Replies  {0}
Cost     O(log N)
]]
--- @include rcall
--- @include OK
--- @include K.deployments
--- @include K.deployment_index
local P = KEYS[1]
rcall('HSET', K.deployments(P), ARGV[1], ARGV[2])
rcall('ZADD', K.deployment_index(P), '0', ARGV[1])
return { OK }
