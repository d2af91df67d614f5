--[[
renew.lua: extends the leases a worker still holds and reports the ones it lost.

A lease is held when its job is running under the same lease id and fence; any other
job (finished, reclaimed, cancelled, re-admitted, gone) is reported lost.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, leases, clock
ARGV[1]  lease duration ms
ARGV[2]  number of leases n; then n triples: job id, lease id, fence
Replies  {0, lost id ...}
Cost     O(n * log N)
]]
--- @include rcall
--- @include K.leases
--- @include OK
--- @include now_ms
--- @include holder
local P = KEYS[1]
local lease_ms, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms(P)
local reply = { OK }
for i = 1, n do
  local b = 2 + (i - 1) * 3
  local id = ARGV[b + 1]
  if holder(P, id, ARGV[b + 2], ARGV[b + 3]) then
    rcall('ZADD', K.leases(P), now + lease_ms, id)
  else
    reply[#reply + 1] = id
  end
end
return reply
