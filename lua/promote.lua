--[[
promote.lua: makes due scheduled and retryable jobs available.

KEYS[1]  namespace prefix; derived keys (lib.lua): scheduled, job:<id>, quarantine,
         held:<fp>, clock, q:<queue>:{counts,ring,p:<part>,wake}, q:<queue>:w:<worker>:{ring,p:<part>}
ARGV[1]  limit: the most jobs promoted in this call
Replies  {0, promoted, due time ms of the next scheduled job (-1 = none)}
Cost     O(limit * log N)
]]
--- @include rcall
--- @include K.scheduled
--- @include OK
--- @include now_ms
--- @include flush_counts
--- @include wake
--- @include load_job
--- @include make_available
local P = KEYS[1]
local limit = tonumber(ARGV[1])
local now = now_ms(P)
local due = rcall('ZRANGEBYSCORE', K.scheduled(P), '-inf', now, 'LIMIT', 0, limit)
local woken = {}
for _, id in ipairs(due) do
  rcall('ZREM', K.scheduled(P), id)
  local j = load_job(P, id)
  if j and (j.state == 'scheduled' or j.state == 'retryable') then
    make_available(P, id, j, now)
    woken[j.queue] = true
  end
end
for q in pairs(woken) do wake(P, q) end
flush_counts(P)
local nxt = rcall('ZRANGE', K.scheduled(P), 0, 0, 'WITHSCORES')
local next_due = -1
if nxt[2] then next_due = tonumber(nxt[2]) end
return { OK, #due, next_due }
