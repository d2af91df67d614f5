--[[
wf_expired_timers.lua: reads (writes nothing) the armed timers due at a time, boundary
included, ordered by fire time, then workflow id, then timer id (the ZSET's order).
Flags: no-writes

KEYS[1]  namespace prefix; derived keys (lib.lua): timers, wftimers:<workflow id>, clock
ARGV[1]  as of (ms; -1 = the store clock now)
ARGV[2]  limit, the most timers returned
Replies  {0, wf1, timer1, fire1, armed1, wf2, ...}
Cost     O(log N + limit)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include K.wf_timers
--- @include K.timers
local P = KEYS[1]
local as_of = tonumber(ARGV[1])
if as_of < 0 then as_of = now_ms(P) end
local limit = tonumber(ARGV[2])
local due = rcall('ZRANGEBYSCORE', K.timers(P), '-inf', as_of, 'WITHSCORES', 'LIMIT', 0, limit)
local out = { OK }
for i = 1, #due, 2 do
  local wf, timer = string.match(due[i], '^(.-)\31(.*)$')
  local cur = rcall('HGET', K.wf_timers(P, wf), timer)
  local armed = ''
  if cur then armed = string.match(cur, ' (%d+)$') end
  out[#out + 1] = wf
  out[#out + 1] = timer
  out[#out + 1] = due[i + 1]
  out[#out + 1] = armed
end
return out
