--[[
list_jobs.lua: a page of one queue's jobs in one state, oldest or newest first by the
store time at which they entered the state, filtered by kind, partition, tag or
fingerprint and by age, through the job indexes (index_select in lib.lua). Reads only.
Flags: no-writes

The walked index is the kind's (or each kind's, merged, when no kind is given), or the
filter index of one filter; further filters are checked on each job, so with two or
more of partition, tag and fingerprint a page looks at up to `budget` entries and may be
short, or empty, while the listing goes on.

KEYS[1]  namespace prefix; derived keys (lib.lua): q:<queue>:kinds,
         q:<queue>:ix:<state>:<kind>[\x1f<dim>\x1f<value>], job:<id>, leases, clock
ARGV[1]  queue
ARGV[2]  state (a job state, or 'held')
ARGV[3]  kind ('' = every kind of q:<queue>:kinds)
ARGV[4]  dimension of the filter index walked ('p', 't', 'f'; '' = the kind index)
ARGV[5]  its value
ARGV[6]  order: 'asc' oldest first, 'desc' newest first
ARGV[7]  page size
ARGV[8]  budget: the most index entries looked at
ARGV[9]  cursor: entry time, ms ('' = from the start)
ARGV[10] cursor: id
ARGV[11] older than, ms ('' = any age)
ARGV[12] partition checked on each job ('' = any)
ARGV[13] tag checked on each job ('' = any)
ARGV[14] fingerprint checked on each job ('' = any)
Replies  {0, next time, next id, done 0/1, id, HGETALL list, lease expiry ms or '', ...}
         | {-9, key, why} an index is corrupt
Cost     O(kinds * (log N + budget)) plus O(limit) job reads
]]
--- @include rcall
--- @include K.job
--- @include K.leases
--- @include OK
--- @include now_ms
--- @include index_select
--- @include index_selection
local P = KEYS[1]
local s = index_selection(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10],
  ARGV[11], ARGV[12], ARGV[13], ARGV[14])
if s.cutoff then s.cutoff = now_ms(P) - s.cutoff end
local ids, at, id, done = index_select(P, s)
if not ids then return at end
local reply = { OK, at and string.format('%d', at) or '', id or '', done and 1 or 0 }
for _, jid in ipairs(ids) do
  reply[#reply + 1] = jid
  reply[#reply + 1] = rcall('HGETALL', K.job(P, jid))
  reply[#reply + 1] = rcall('ZSCORE', K.leases(P), jid) or ''
end
return reply
