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
--- @include put_namespace_record
return put_namespace_record(KEYS[1], ARGV[1], {
  origin = ARGV[2], state = 'active', placement = ARGV[3], config = ARGV[4], created = -1, seen = -1,
})
