--[[
wf_put_namespace.lua: writes a whole namespace record when the name is absent; on a name
already registered it is idempotent: the stored record stays, only its last-seen time is
bumped (already_existed).

KEYS[1]  registry prefix (hg:{registry}:); derived keys (lib.lua): nsrec:<name>, nsidx, clock
ARGV[1]  namespace name
ARGV[2]  origin (explicit | worker_mint)
ARGV[3]  state (active | deprecated)
ARGV[4]  placement (JSON)
ARGV[5]  config (JSON)
ARGV[6]  created (ms; -1 = the store clock now)
ARGV[7]  last seen (ms; -1 = created)
Replies  {0, 'created'} | {0, 'already_existed'}
Cost     O(log N)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include SEP
--- @include K.ns_record
--- @include K.ns_index
--- @include pad_ms
local P = KEYS[1]
local name = ARGV[1]
local rk = K.ns_record(P, name)
local now = now_ms(P)
if rcall('EXISTS', rk) == 1 then
  rcall('HSET', rk, 'seen', now)
  return { OK, 'already_existed' }
end
local created = tonumber(ARGV[6])
if created < 0 then created = now end
local seen = tonumber(ARGV[7])
if seen < 0 then seen = created end
rcall('HSET', rk, 'name', name, 'origin', ARGV[2], 'state', ARGV[3], 'placement', ARGV[4], 'config', ARGV[5],
  'created', created, 'seen', seen)
rcall('ZADD', K.ns_index(P), '0', pad_ms(created) .. SEP .. name)
return { OK, 'created' }
