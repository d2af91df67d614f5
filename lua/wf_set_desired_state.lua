--[[
wf_set_desired_state.lua: changes a worker deployment's desired state (stamping when it
changed); its spec and creation time stay. A deployment already in that state is
returned as stored, and nothing is written. An absent deployment is not found; one stored
undecodable is refused, and nothing is written. The per-version active counts
(verdeploys) follow the state: a version whose deployments are none of them active is
draining, and new runs no longer start on it.

KEYS[1]  namespace prefix; derived keys (lib.lua): deploys, verdeploys, clock
ARGV[1]  deployment name
ARGV[2]  desired state (active | draining | drained)
Replies  {0, 1, row} | {0, 0} absent | {-21, what} undecodable | {-9, key, why} corrupt
Cost     O(row size + versions)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include K.deployments
--- @include E_UNDECODABLE
--- @include deployment_parse
--- @include deployment_row
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
local m, spec = deployment_parse(prev)
if not m then return { E_UNDECODABLE, 'worker deployment "' .. name .. '"' } end
if m.desired == ARGV[2] then return { OK, 1, prev } end -- already so: nothing written, its stamps stay
local now = now_ms(P)
local row = deployment_row(m.created, now, ARGV[2], now, spec)
deployment_count(P, prev, -1)
deployment_count(P, row, 1)
rcall('HSET', K.deployments(P), name, row)
return { OK, 1, row }
