--[[
claim_duty.lua: takes or renews a named maintenance duty, so one worker in the fleet runs it.

The duty is free when nobody holds it or the holder's lease has run out on the store
clock; the current holder renews it. Each tenure (a claim that is not a renewal of a live
lease) takes the next fence, kept across releases, so a script that writes on behalf
of a duty (fire_schedule) can refuse a holder whose tenure has ended. A duty key whose data is corrupt (not a hash, an
expiry that is not a time) holds nobody: the claim replaces it, so a corrupt lease never
stops the fleet's maintenance.

KEYS[1]  namespace prefix; derived keys (lib.lua): duty:<name> {holder, exp, fence}, clock
ARGV[1]  duty name
ARGV[2]  holder id
ARGV[3]  lease ms
Replies  {0, 1, fence} claimed | {0, 0, 0} held by another
Cost     O(1)
]]
--- @include rcall
--- @include K.duty
--- @include OK
--- @include now_ms
--- @include safe_hmget
--- @include MAX_SAFE
local P = KEYS[1]
local k = K.duty(P, ARGV[1])
local now = now_ms(P)
local v = safe_hmget(k, 'holder', 'exp', 'fence')
local fence = 1
if v then
  local exp = tonumber(v[2])
  local live = v[1] and exp and exp <= MAX_SAFE and exp > now
  if live and v[1] ~= ARGV[2] then return { OK, 0, 0 } end
  fence = tonumber(v[3]) or 0
  if not live then fence = fence + 1 end
else
  rcall('DEL', k)
end
rcall('HSET', k, 'holder', ARGV[2], 'exp', now + tonumber(ARGV[3]), 'fence', fence)
return { OK, 1, fence }
