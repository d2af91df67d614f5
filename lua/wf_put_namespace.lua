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
--- @include put_namespace_record
return put_namespace_record(KEYS[1], ARGV[1], {
  origin = ARGV[2], state = ARGV[3], placement = ARGV[4], config = ARGV[5],
  created = tonumber(ARGV[6]), seen = tonumber(ARGV[7]),
})
