--[[
release_pending.lua: releases staged (pending) jobs: scheduled when their time is in the
future, else available. Jobs not pending are left as they are and reported.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, scheduled, quarantine,
         held:<fp>, clock, q:<queue>:{counts,ring,p:<part>,wake}, q:<queue>:w:<worker>:{ring,p:<part>}
ARGV[1..n] job ids
Replies  {0, id not released ...}
Cost     O(n * log N)
]]
--- @include OK
--- @include now_ms
--- @include flush_counts
--- @include wake
--- @include load_job
--- @include schedule
--- @include make_available
local P = KEYS[1]
local now = now_ms(P)
local reply = { OK }
for _, id in ipairs(ARGV) do
  local j = load_job(P, id)
  if j and j.state == 'pending' then
    if j.sched > now then
      schedule(P, id, j, 'scheduled', j.sched)
    else
      make_available(P, id, j, now)
      wake(P, j.queue)
    end
  else
    reply[#reply + 1] = id
  end
end
flush_counts(P)
return reply
