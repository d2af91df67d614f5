--[[
set_rate_limit.lua: configures a rate class's token bucket, full, refilled from now. The
call writes every field of the bucket, so it also repairs a corrupt one: a rate key of
another type is replaced.

KEYS[1]  namespace prefix; derived keys (lib.lua): rate:<class>, starved, clock
ARGV[1]  class
ARGV[2]  limit (tokens per window)
ARGV[3]  window ms
ARGV[4]  burst (bucket size)
Replies  {0}
Cost     O(1)
]]
--- @include rcall
--- @include K.rate
--- @include OK
--- @include now_ms
--- @include key_ok
--- @include rate_changed
local P = KEYS[1]
local now = now_ms(P)
local k = K.rate(P, ARGV[1])
if not key_ok(k, 'hash') then rcall('DEL', k) end
rcall('HSET', k, 'tokens', ARGV[4], 'burst', ARGV[4], 'limit', ARGV[2], 'window', ARGV[3], 'refilled', now)
rate_changed(P, ARGV[1])
return { OK }
