--[[
release_pending.lua: releases staged (pending) jobs: scheduled when their time is in the
future, else available. Jobs not pending are left as they are and reported; so is a job
whose data is corrupt, which is parked (recorded in K.corrupt). Everything that can fail
is read and checked before the first write; a structure a release would write being
corrupt refuses the whole call.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, scheduled, quarantine,
         held:<fp>, clock, corrupt, q:<queue>:{counts,ring,p:<part>,wake},
         q:<queue>:w:<worker>:{ring,p:<part>}
ARGV[1..n] job ids
Replies  {0, id not released ...} | {-9, key, why} Corrupt
Cost     O(n * log N)
]]
--- @include OK
--- @include now_ms
--- @include flush_counts
--- @include wake
--- @include schedule
--- @include make_available
--- @include K.scheduled
--- @include first_bad_key
--- @include K.quarantine
--- @include corrupt_reply
--- @include load_job_checked
--- @include JOB_FIELDS
--- @include counts_ok
--- @include K.counts
--- @include route_bad_key
--- @include parking_refused
--- @include park_corrupt
local P = KEYS[1]
local now = now_ms(P)
local sk = K.scheduled(P)
local bad, why = first_bad_key({ { K.quarantine(P), 'hash' } })
if bad then return corrupt_reply(bad, why) end
local reply = { OK }
local later, ready, parked, seen = {}, {}, {}, {}
for _, id in ipairs(ARGV) do
  local j, jwhy = nil, nil
  if not seen[id] then j, jwhy = load_job_checked(P, id, JOB_FIELDS) end
  seen[id] = true
  if j and j.state == 'pending' then
    if j.sched > now then
      if not counts_ok(P, j.queue) then return corrupt_reply(K.counts(P, j.queue), 'is not a hash of integer counts') end
      bad, why = first_bad_key({ { sk, 'zset' } })
      if bad then return corrupt_reply(bad, why) end
      later[#later + 1] = { id, j }
    else
      bad, why = route_bad_key(P, j)
      if bad then return corrupt_reply(bad, why) end
      ready[#ready + 1] = { id, j }
    end
  else
    if jwhy then parked[#parked + 1] = { id, jwhy } end
    reply[#reply + 1] = id
  end
end
local refused = parking_refused(P, parked)
if refused then return refused end

for _, p in ipairs(parked) do park_corrupt(P, p[1], p[2]) end
for _, m in ipairs(later) do schedule(P, m[1], m[2], 'scheduled', m[2].sched) end
for _, m in ipairs(ready) do
  make_available(P, m[1], m[2], now)
  wake(P, m[2].queue)
end
flush_counts(P)
return reply
