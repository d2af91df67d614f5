--[[
renew.lua: extends the leases a worker still holds and reports the ones it lost.

A lease is held when its job is running under the same lease id and fence; any other
job (finished, reclaimed, cancelled, re-admitted, gone) is reported lost. A job whose data
is corrupt is reported lost too, and parked: it leaves the leases and is recorded in
K.corrupt. Everything that can fail is read before the first write.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, leases, corrupt, clock, counters,
         admission:<lease id> (its record lives as long as a lease it names, so that a
         repeat of a deleting ack after a renewal is still recognised)
ARGV[1]  lease duration ms
ARGV[2]  number of leases n; then n triples: job id, lease id, fence
Replies  {0, lost id ...} | {-9, key, why} Corrupt
Cost     O(n * log N)
]]
--- @include rcall
--- @include K.leases
--- @include K.admission
--- @include OK
--- @include now_ms
--- @include first_bad_key
--- @include corrupt_reply
--- @include holder_checked
--- @include parking_refused
--- @include park_corrupt
--- @include count_event
local P = KEYS[1]
local lease_ms, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms(P)
local lk = K.leases(P)
local bad, why = first_bad_key({ { lk, 'zset' } })
if bad then return corrupt_reply(bad, why) end
local reply = { OK }
local held, parked = {}, {}
local renewed = {} -- lease ids of the held jobs
for i = 1, n do
  local b = 2 + (i - 1) * 3
  local id = ARGV[b + 1]
  local j, jwhy = holder_checked(P, id, ARGV[b + 2], ARGV[b + 3])
  if j then
    held[#held + 1] = id
    renewed[ARGV[b + 2]] = true
  else
    if jwhy then parked[#parked + 1] = { id, jwhy } end
    reply[#reply + 1] = id
  end
end
local refused = parking_refused(P, parked)
if refused then return refused end
count_event(P, 'lease_rejected', #reply - 1)

for _, id in ipairs(held) do rcall('ZADD', lk, now + lease_ms, id) end
-- PEXPIRE of a missing key does nothing, and no type makes it fail.
for lease in pairs(renewed) do rcall('PEXPIRE', K.admission(P, lease), lease_ms) end
for _, p in ipairs(parked) do
  rcall('ZREM', lk, p[1])
  park_corrupt(P, p[1], p[2])
end
return reply
