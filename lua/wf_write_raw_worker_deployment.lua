--[[
wf_write_raw_worker_deployment.lua: stores bytes as a worker deployment's row, bypassing
the record's encoding, so tests can pin how the store lists, replaces and deletes a
poisoned row. The per-version counts (verdeploys) move as for a put, so bytes that
decode count and a poisoned row counts for nothing.

KEYS[1]  namespace prefix; derived keys (lib.lua): deploys, deployidx, verdeploys
ARGV[1]  deployment name
ARGV[2]  bytes
Replies  {0} | {-9, key, why} corrupt
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
need(K.version_deployments(P), 'hash')
local bad = structure_error()
if bad then return bad end
deployment_count(P, rcall('HGET', K.deployments(P), ARGV[1]), -1)
deployment_count(P, ARGV[2], 1)
rcall('HSET', K.deployments(P), ARGV[1], ARGV[2])
rcall('ZADD', K.deployment_index(P), '0', ARGV[1])
return { OK }
