--[[
bulk_delete.lua: an operator deletes a batch of the jobs that a filter selects through
the job indexes (index_select in lib.lua), as delete.lua deletes one: each job's hash,
side keys and index entries go, and the strict unique key it holds is released. Running
jobs are not selected (Go refuses the running state: cancel them first). The batch is all
or nothing: every structure its writes touch is checked first. A dry run only counts.
Per-tenant purge is a bulk delete by partition, state by state.

KEYS[1]  namespace prefix; derived keys (lib.lua): q:<queue>:kinds,
         q:<queue>:ix:<state>:<kind>[\x1f<dim>\x1f<value>], q:<queue>:pc:<part>,
         job:<id>, errors:<id>, result:<id>, output:<id>, progress:<id>, scheduled,
         retained, unique, held:<fp>, parked:<class>, clock,
         q:<queue>:{counts,ring,drr,p:<part>}, q:<queue>:w:<worker>:{ring,drr,p:<part>}
ARGV[1]  queue
ARGV[2]  state (any but running; 'held' for held jobs)
ARGV[3..14] the rest of the filter and the batch, as ARGV[3..14] of list_jobs.lua (from
         Store.selection, for index_selection): kind, index dimension and value, order
         ('asc'), batch size (at most 1000), budget, cursor time and id, entered at or
         before (store ms), partition, tag, fingerprint
ARGV[15] dry run (0/1): count, write nothing
Replies  {0, next time, next id, done 0/1, deleted, skipped} | {-9, key, why} Corrupt
         | {-13, kinds, most} name a kind
Cost     O(batch * log N)
]]
--- @include flush_counts
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
--- @include release_unique
--- @include delete_job
local P = KEYS[1]
local s = index_selection(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10],
  ARGV[11], ARGV[12], ARGV[13], ARGV[14])
local dry = ARGV[15] == '1'
local ids, at, id, done = index_select(P, s)
if not ids then return at end
local jobs, skipped = bulk_load(P, ids, s.state, BULK_JOB_FIELDS)
local kept = {}
for _, j in ipairs(jobs) do
  if j.state == 'running' then
    skipped = skipped + 1
  else
    need_leave_state(P, j)
    kept[#kept + 1] = j
  end
end
local bad = structure_error()
if bad then return bad end
if dry then return bulk_reply(at, id, done, #kept, skipped) end

-- The batch only takes jobs out of partition sets: one ZREM per partition (flush_unavailable).
available_rems = {}
for _, j in ipairs(kept) do
  local jid = j.id
  leave_state(P, jid, j)
  release_unique(P, jid, j)
  delete_job(P, jid, j)
end
flush_unavailable()
flush_counts(P)
return bulk_reply(at, id, done, #kept, skipped)
