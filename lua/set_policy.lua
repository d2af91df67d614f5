--[[
set_policy.lua: writes the namespace's fleet-wide policy, every field at once.

The policy HASH holds what every worker of the namespace applies, read by the scripts on
each call (nobody caches it). Go validated the values (policy.go); a value that is not a
whole number refuses the whole call before any write.

KEYS[1]  namespace prefix; derived keys (lib.lua): policy
ARGV[1]  retry_base ms
ARGV[2]  retry_cap ms
ARGV[3]  crash_limit
ARGV[4]  crash_base ms
ARGV[5]  ret_archived ms (0 = never evicted)
ARGV[6]  ret_undecodable ms (0 = never evicted)
ARGV[7]  ret_cancelled ms (0 = never evicted)
ARGV[8]  snooze_limit
ARGV[9]  fp_inflight (0 = no cap)
Replies  {0}
Cost     O(1)
]]
--- @include rcall
--- @include K.policy
--- @include OK
local P = KEYS[1]
local fields = { retry_base = ARGV[1], retry_cap = ARGV[2], crash_limit = ARGV[3], crash_base = ARGV[4],
  ret_archived = ARGV[5], ret_undecodable = ARGV[6], ret_cancelled = ARGV[7], snooze_limit = ARGV[8],
  fp_inflight = ARGV[9] }
local pairs_ = {}
for f, v in pairs(fields) do
  if not string.match(v or '', '^%d+$') then
    return redis.error_reply('headgate: policy field ' .. f .. ' is not a whole number')
  end
  pairs_[#pairs_ + 1] = f
  pairs_[#pairs_ + 1] = v
end
rcall('HSET', K.policy(P), unpack(pairs_))
return { OK }
