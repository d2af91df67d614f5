--[[
delete.lua: an operator deletes a job that is not running, in any other state: its hash,
its errors, result, output and progress, and every index entry it has (its partition and
ring, its fingerprint's held set or its rate class's parked jobs; the scheduled and
retained indexes; the strict unique key it holds). A running job is refused: cancel it first. A throttle window the job
opened runs out on its own, as after an eviction, and a fingerprint the job quarantined
stays quarantined until released. A job whose own data is corrupt is parked, as
cancel.lua does; once an operator repaired it, its delete also removes its entry in
`corrupt`.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, errors:<id>, result:<id>,
         output:<id>, progress:<id>, scheduled, leases, retained, unique, held:<fp>, parked:<class>,
         clock, corrupt, q:<queue>:{counts,ring,drr,p:<part>}, q:<queue>:w:<worker>:{ring,drr,p:<part>}
ARGV[1]  job id
Replies  {0, state it had} | {0, 'parked', why} the job's data is corrupt: parked |
         {-7} not found | {-11} running | {-9, key, why} Corrupt
Cost     O(log N)
]]
--- @include K.retained
--- @include K.counts
--- @include OK
--- @include E_NOT_FOUND
--- @include E_JOB_RUNNING
--- @include corrupt_reply
--- @include UNFINISHED
--- @include flush_counts
--- @include load_job_checked
--- @include JOB_FIELDS
--- @include counts_ok
--- @include first_bad_key
--- @include unindex_job_keys
--- @include unindex_job
--- @include release_unique
--- @include delete_job
--- @include park_unreadable_job
--- @include K.corrupt
--- @include rcall
local P = KEYS[1]
local id = ARGV[1]

local j, why = load_job_checked(P, id, JOB_FIELDS)
if why then return park_unreadable_job(P, id, why) end
if not j then return { E_NOT_FOUND } end
if j.state == 'running' then return { E_JOB_RUNNING } end

-- Every key the writes below touch, checked before the first of them.
if not counts_ok(P, j.queue) then return corrupt_reply(K.counts(P, j.queue), 'is not a hash of integer counts') end
local checks = unindex_job_keys(P, j, {})
if not UNFINISHED[j.state] then checks[#checks + 1] = { K.retained(P), 'zset' } end
checks[#checks + 1] = { K.corrupt(P), 'hash' }
local bad, bad_why = first_bad_key(checks)
if bad then return corrupt_reply(bad, bad_why) end

-- The writes.
unindex_job(P, id, j)
release_unique(P, id, j)
delete_job(P, id, j)
-- A job parked as corrupt whose data an operator repaired is gone, and so is its entry.
rcall('HDEL', K.corrupt(P), id)
flush_counts(P)
return { OK, j.state }
