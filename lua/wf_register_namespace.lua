--[[
wf_register_namespace.lua: registers a namespace in the registry when absent (created,
active, unplaced, created = last seen = now); a namespace already registered only has its
last-seen time bumped: its origin and everything else stay.

KEYS[1]  registry prefix (hg:{registry}:); derived keys (lib.lua): nsrec:<name>, nsidx, clock
ARGV[1]  namespace name
ARGV[2]  origin (explicit | worker_mint)
ARGV[3]  placement (JSON) of a new record
ARGV[4]  config (JSON) of a new record
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
rcall('HSET', rk, 'name', name, 'origin', ARGV[2], 'state', 'active', 'placement', ARGV[3], 'config', ARGV[4],
  'created', now, 'seen', now)
rcall('ZADD', K.ns_index(P), '0', pad_ms(now) .. SEP .. name)
return { OK, 'created' }
