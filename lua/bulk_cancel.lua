--[[
bulk_cancel.lua: an operator cancels a batch of the unfinished jobs that a filter selects
through the job indexes (index_select in lib.lua), as cancel.lua cancels one: each
becomes cancelled, a running one loses its lease and its holder hears of it on the
cancel channel. The batch is all or nothing: every structure its writes touch is checked
first. A dry run only counts. The Go side calls it batch after batch from the cursor it
returns.

KEYS[1]  namespace prefix; derived keys (lib.lua): q:<queue>:kinds,
         q:<queue>:ix:<state>:<kind>[\x1f<dim>\x1f<value>], q:<queue>:pc:<part>,
         job:<id>, leases, scheduled, retained, unique, held:<fp>, parked:<class>, policy,
         clock, q:<queue>:{counts,ring,drr,p:<part>}, q:<queue>:w:<worker>:{ring,drr,p:<part>};
         channel (not a key): cancelled
ARGV[1]  queue
ARGV[2]  state (pending, scheduled, available, running, retryable, or 'held')
ARGV[3..14] the rest of the filter and the batch, as ARGV[3..14] of list_jobs.lua (from
         Store.selection, for index_selection): kind, index dimension and value, order
         ('asc'), batch size (at most 1000), budget, cursor time and id, entered at or
         before (store ms), partition, tag, fingerprint
ARGV[15] dry run (0/1): count, write nothing
Replies  {0, next time, next id, done 0/1, cancelled, skipped} | {-9, key, why} Corrupt
         | {-13, kinds, most} name a kind
Publish  on K.cancelled, for each running job cancelled: "<fence> <job id>\n<lease id>"
Cost     O(batch * log N)
]]
--- @include rcall
--- @include K.cancelled
--- @include now_ms
--- @include flush_counts
--- @include load_policy_checked
--- @include index_select
--- @include index_selection
--- @include structure_error
--- @include need_leave_state
--- @include leave_state
--- @include bulk_load
--- @include available_rems
--- @include flush_unavailable
--- @include BULK_JOB_FIELDS
--- @include bulk_reply
--- @include finalize
local P = KEYS[1]
local s = index_selection(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10],
  ARGV[11], ARGV[12], ARGV[13], ARGV[14])
local dry = ARGV[15] == '1'
local now = now_ms(P)
local _, bad = load_policy_checked(P)
if bad then return bad end
local ids, at, id, done = index_select(P, s)
if not ids then return at end
local jobs, skipped = bulk_load(P, ids, s.state, BULK_JOB_FIELDS)
for _, j in ipairs(jobs) do need_leave_state(P, j) end
bad = structure_error()
if bad then return bad end
if dry then return bulk_reply(at, id, done, #jobs, skipped) end

-- The batch only takes jobs out of partition sets: one ZREM per partition (flush_unavailable).
available_rems = {}
local running = {}
for _, j in ipairs(jobs) do
  local jid = j.id
  if j.state == 'running' then running[#running + 1] = string.format('%d', j.fence) .. ' ' .. jid .. '\n' .. j.lease end
  leave_state(P, jid, j)
  finalize(P, jid, j, 'cancelled', now)
end
flush_unavailable()
flush_counts(P)
for _, msg in ipairs(running) do rcall('PUBLISH', K.cancelled(P), msg) end
return bulk_reply(at, id, done, #jobs, skipped)
