--[[
release_quarantine.lua: an operator releases a quarantined fingerprint. New enqueues with
it are accepted again and its held siblings return to admission, `limit` per call (the
caller repeats until none remain). The quarantined jobs themselves stay quarantined.

Everything that can fail is read and checked before the first write: a held job whose data
is corrupt leaves the held set and is parked (K.corrupt); a structure the release would
write being corrupt refuses the whole call.

KEYS[1]  namespace prefix; derived keys (lib.lua): quarantine, held:<fp>, job:<id>,
         clock, corrupt, q:<queue>:{counts,ring,drr,p:<part>,wake}, q:<queue>:w:<worker>:{ring,p:<part>}
ARGV[1]  fingerprint
ARGV[2]  limit
Replies  {0, taken from the held set now, still held} | {-9, key, why} Corrupt
Cost     O(limit * log N)
]]
--- @include rcall
--- @include K.job
--- @include K.quarantine
--- @include K.held
--- @include OK
--- @include wake
--- @include index_available
--- @include first_bad_key
--- @include corrupt_reply
--- @include load_job_checked
--- @include JOB_FIELDS
--- @include index_bad_key
--- @include parking_refused
--- @include park_corrupt
--- @include counts_ok
--- @include K.counts
--- @include move_count
--- @include flush_counts
--- @include index_move
--- @include index_clock
local P = KEYS[1]
local fp, limit = ARGV[1], tonumber(ARGV[2])
local qk, hk = K.quarantine(P), K.held(P, fp)
local bad, why = first_bad_key({ { qk, 'hash' }, { hk, 'set' } })
if bad then return corrupt_reply(bad, why) end
local ids = rcall('SRANDMEMBER', hk, limit)
local moves, parked = {}, {}
for _, id in ipairs(ids) do
  local j, jwhy = load_job_checked(P, id, JOB_FIELDS)
  if jwhy then
    parked[#parked + 1] = { id, jwhy }
  elseif j and j.state == 'available' then
    bad, why = index_bad_key(P, j)
    if bad then return corrupt_reply(bad, why) end
    if not counts_ok(P, j.queue) then return corrupt_reply(K.counts(P, j.queue), 'is not a hash of integer counts') end
    moves[#moves + 1] = { id, j }
  end
end
local refused = parking_refused(P, parked)
if refused then return refused end

rcall('HDEL', qk, fp)
for _, id in ipairs(ids) do rcall('SREM', hk, id) end
for _, p in ipairs(parked) do park_corrupt(P, p[1], p[2]) end
local woken = {}
for _, m in ipairs(moves) do
  local id, j = m[1], m[2]
  rcall('HDEL', K.job(P, id), 'held')
  move_count(P, j.queue, 'held', 'available')
  index_move(P, id, j, 'held', 'available', index_clock(P))
  index_available(P, id, j.queue, j.part, j.sticky, j.prio, j.sched)
  woken[j.queue] = true
end
for q in pairs(woken) do wake(P, q) end
flush_counts(P)
return { OK, #ids, rcall('SCARD', hk) }
