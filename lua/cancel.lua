--[[
cancel.lua: an operator cancels an unfinished job. It becomes cancelled (terminal); a
running holder loses its lease, so its later ack is LeaseRejected, and the holder hears
of it at once: the script publishes the lease on the namespace's cancel channel, to which
every worker subscribes, so the handler's context is cancelled within a round trip
rather than at the next lease renewal.

Everything that can fail is read and checked before the first write. A job whose own data
is corrupt (its key is not a hash, a field does not parse or is impossible) is parked
instead: recorded in K.corrupt with the reason and taken out of the leases and scheduled
indexes (keyed by id alone), so nothing runs it. A structure the cancel would write being
corrupt refuses the call with nothing written.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, leases, scheduled, retained,
         unique, held:<fp>, clock, corrupt, q:<queue>:{counts,ring,drr,p:<part>},
         q:<queue>:w:<worker>:{ring,drr,p:<part>}; channel (not a key): cancelled
ARGV[1]  job id
Replies  {0} cancelled | {0, 'parked', why} the job's data is corrupt: parked |
         {-7} not found | {-8, state} already terminal | {-9, key, why} Corrupt
Publish  on K.cancelled, when the job was running: "<fence> <job id>\n<lease id>"
Cost     O(log N)
]]
--- @include rcall
--- @include K.leases
--- @include K.retained
--- @include K.counts
--- @include K.cancelled
--- @include OK
--- @include E_NOT_FOUND
--- @include E_NOT_CANCELLABLE
--- @include corrupt_reply
--- @include now_ms
--- @include UNFINISHED
--- @include flush_counts
--- @include load_job_checked
--- @include JOB_FIELDS
--- @include counts_ok
--- @include first_bad_key
--- @include park_unreadable_job
--- @include unindex_job_keys
--- @include unindex_job
--- @include drop_lease
--- @include finalize
local P = KEYS[1]
local id = ARGV[1]

local j, why = load_job_checked(P, id, JOB_FIELDS)
if why then return park_unreadable_job(P, id, why) end
if not j then return { E_NOT_FOUND } end
if not UNFINISHED[j.state] then return { E_NOT_CANCELLABLE, j.state } end

-- Every key the writes below touch, checked before the first of them.
local now = now_ms(P)
if not counts_ok(P, j.queue) then return corrupt_reply(K.counts(P, j.queue), 'is not a hash of integer counts') end
local writes = {}
if j.state == 'running' then writes[#writes + 1] = { K.leases(P), 'zset' } end
unindex_job_keys(P, j, writes)
if j.ret > 0 then writes[#writes + 1] = { K.retained(P), 'zset' } end
local bad, bad_why = first_bad_key(writes)
if bad then return corrupt_reply(bad, bad_why) end

local running = j.state == 'running'
if running then drop_lease(P, id) else unindex_job(P, id, j) end
finalize(P, id, j, 'cancelled', now)
flush_counts(P)
if running then
  rcall('PUBLISH', K.cancelled(P), string.format('%d', j.fence) .. ' ' .. id .. '\n' .. j.lease)
end
return { OK }
