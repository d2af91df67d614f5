--[[
release_quarantine.lua: an operator releases a quarantined fingerprint. New enqueues with
it are accepted again and its held siblings return to admission, `limit` per call (the
caller repeats until none remain). The quarantined jobs themselves stay quarantined.

KEYS[1]  namespace prefix; derived keys (lib.lua): quarantine, held:<fp>, job:<id>,
         clock, q:<queue>:{ring,p:<part>,wake}, q:<queue>:w:<worker>:{ring,p:<part>}
ARGV[1]  fingerprint
ARGV[2]  limit
Replies  {0, released now, still held}
Cost     O(limit * log N)
]]
--- @include rcall
--- @include K.job
--- @include K.quarantine
--- @include K.held
--- @include OK
--- @include wake
--- @include index_available
--- @include load_job
local P = KEYS[1]
local fp, limit = ARGV[1], tonumber(ARGV[2])
rcall('HDEL', K.quarantine(P), fp)
local hk = K.held(P, fp)
local ids = rcall('SPOP', hk, limit)
local woken = {}
for _, id in ipairs(ids) do
  local j = load_job(P, id)
  if j and j.state == 'available' then
    rcall('HDEL', K.job(P, id), 'held')
    index_available(P, id, j.queue, j.part, j.sticky, j.prio, j.sched)
    woken[j.queue] = true
  end
end
for q in pairs(woken) do wake(P, q) end
return { OK, #ids, rcall('SCARD', hk) }
