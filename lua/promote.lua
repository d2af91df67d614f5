--[[
promote.lua: makes due scheduled and retryable jobs available.

Everything that can fail is read and checked before the first write: a due job whose data
is corrupt leaves the scheduled set and is parked (K.corrupt) while the others move on; a
structure that a move would write being corrupt refuses the whole call.

KEYS[1]  namespace prefix; derived keys (lib.lua): scheduled, job:<id>, quarantine,
         held:<fp>, clock, corrupt, q:<queue>:{counts,ring,p:<part>,wake},
         q:<queue>:w:<worker>:{ring,p:<part>}
ARGV[1]  limit: the most jobs promoted in this call
Replies  {0, due jobs taken (promoted, parked or stale), due time ms of the next scheduled
         job (-1 = none)} | {-9, key, why} Corrupt
Cost     O(limit * log N)
]]
--- @include rcall
--- @include K.scheduled
--- @include OK
--- @include now_ms
--- @include flush_counts
--- @include wake
--- @include make_available
--- @include K.quarantine
--- @include first_bad_key
--- @include corrupt_reply
--- @include load_job_checked
--- @include JOB_FIELDS
--- @include route_bad_key
--- @include parking_refused
--- @include park_corrupt
local P = KEYS[1]
local limit = tonumber(ARGV[1])
local now = now_ms(P)
local sk, qk = K.scheduled(P), K.quarantine(P)
local bad, why = first_bad_key({ { sk, 'zset' }, { qk, 'hash' } })
if bad then return corrupt_reply(bad, why) end
local due = rcall('ZRANGEBYSCORE', sk, '-inf', now, 'LIMIT', 0, limit)
local moves, parked = {}, {}
for _, id in ipairs(due) do
  local j, jwhy = load_job_checked(P, id, JOB_FIELDS)
  if jwhy then
    parked[#parked + 1] = { id, jwhy }
  elseif j and (j.state == 'scheduled' or j.state == 'retryable') then
    bad, why = route_bad_key(P, j)
    if bad then return corrupt_reply(bad, why) end
    moves[#moves + 1] = { id, j }
  end
end
local refused = parking_refused(P, parked)
if refused then return refused end

-- Writes: none of them can fail now.
for _, id in ipairs(due) do rcall('ZREM', sk, id) end
for _, p in ipairs(parked) do park_corrupt(P, p[1], p[2]) end
local woken = {}
for _, m in ipairs(moves) do
  make_available(P, m[1], m[2], now)
  woken[m[2].queue] = true
end
for q in pairs(woken) do wake(P, q) end
flush_counts(P)
local nxt = rcall('ZRANGE', sk, 0, 0, 'WITHSCORES')
local next_due = -1
if nxt[2] then next_due = tonumber(nxt[2]) end
return { OK, #due, next_due }
