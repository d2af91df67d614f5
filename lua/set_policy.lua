--[[
set_policy.lua: writes the namespace's fleet-wide policy, every field at once.

The policy HASH holds what every worker of the namespace applies, read by the scripts on
each call (nobody caches it): retry_base, retry_cap, crash_base (ms), crash_limit,
ret_archived, ret_undecodable, ret_cancelled (ms, 0 = never evicted), snooze_limit,
fp_inflight (0 = off). Go validated the values (policy.go); a field name the script does
not know refuses the whole call before any write.

KEYS[1]  namespace prefix; derived keys (lib.lua): policy
ARGV     field, value pairs
Replies  {0}
Cost     O(number of fields)
]]
--- @include POLICY_FIELDS
--- @include rcall
--- @include K.policy
--- @include OK
local P = KEYS[1]
local FIELDS = { fp_inflight = true }
for _, f in ipairs(POLICY_FIELDS) do FIELDS[f] = true end
for i = 1, #ARGV, 2 do
  if not FIELDS[ARGV[i]] then return redis.error_reply('headgate: unknown policy field ' .. tostring(ARGV[i])) end
  if not string.match(ARGV[i + 1] or '', '^%d+$') then
    return redis.error_reply('headgate: policy field ' .. ARGV[i] .. ' is not a whole number')
  end
end
rcall('HSET', K.policy(P), unpack(ARGV))
return { OK }
