--[[
wf_put_worker_deployment.lua: writes a worker deployment. A new one is created with the
given desired state; one that exists keeps its creation time and desired state (changed
only by wf_set_desired_state) and takes the new spec. Undecodable prior bytes are
replaced as if absent, but the outcome is still replaced. The per-version counts
(verdeploys) move from the prior row to the new one.

KEYS[1]  namespace prefix; derived keys (lib.lua): deploys, deployidx, verdeploys, clock
ARGV[1]  deployment name
ARGV[2]  spec (JSON, one line)
ARGV[3]  desired state of a new deployment (active | draining | drained)
Replies  {0, 'created' | 'replaced', row} | {-9, key, why} corrupt
Cost     O(log N + row size + versions)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include K.deployments
--- @include K.deployment_index
--- @include deployment_parse
--- @include deployment_row
--- @include need
--- @include structure_error
--- @include K.version_deployments
--- @include deployment_count
local P = KEYS[1]
local name, spec = ARGV[1], ARGV[2]
local now = now_ms(P)
need(K.version_deployments(P), 'hash')
local bad = structure_error()
if bad then return bad end
local prev = rcall('HGET', K.deployments(P), name)
local created, desired, desired_at = now, ARGV[3], now
local outcome = 'created'
if prev then
  outcome = 'replaced'
  local m = deployment_parse(prev)
  if m then created, desired, desired_at = m.created, m.desired, m.desired_at end
end
local row = deployment_row(created, now, desired, desired_at, spec)
deployment_count(P, prev, -1)
deployment_count(P, row, 1)
rcall('HSET', K.deployments(P), name, row)
rcall('ZADD', K.deployment_index(P), '0', name)
return { OK, outcome, row }
