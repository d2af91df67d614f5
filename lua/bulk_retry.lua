--[[
bulk_retry.lua: an operator retries a batch of the finished jobs (archived, undecodable,
cancelled, quarantined, completed and retained) that a filter selects through the job
indexes (index_select in lib.lua), as retry.lua retries one: each becomes available now
on its queue, its attempts from zero unless kept, out of the retained index. A job whose
strict unique key another job now holds is skipped. The queue's limit on unfinished jobs
applies to the batch as to an enqueue of it: over the limit, the whole batch is refused.
A quarantined job's fingerprint stays quarantined (the job is held with its siblings).
The batch is all or nothing: every structure its writes touch is checked first. A dry run
only counts.

KEYS[1]  namespace prefix; derived keys (lib.lua): q:<queue>:kinds,
         q:<queue>:ix:<state>:<kind>[\x1f<dim>\x1f<value>], q:<queue>:pc:<part>,
         job:<id>, scheduled, retained, unique, quarantine, held:<fp>, limits, clock,
         q:<queue>:{counts,ring,drr,p:<part>,wake}, q:<queue>:w:<worker>:{ring,drr,p:<part>}
ARGV[1]  queue
ARGV[2]  state (archived, undecodable, cancelled, quarantined, completed)
ARGV[3]  kind ('' = every kind of q:<queue>:kinds)
ARGV[4]  dimension of the filter index walked ('p', 't', 'f'; '' = the kind index)
ARGV[5]  its value
ARGV[6]  order: 'asc' oldest first
ARGV[7]  batch size, at most 1000
ARGV[8]  budget: the most index entries looked at
ARGV[9]  cursor: entry time, ms ('' = from the start)
ARGV[10] cursor: id
ARGV[11] only jobs that entered the state at or before this store time, ms ('' = any)
ARGV[12] partition checked on each job ('' = any)
ARGV[13] tag checked on each job ('' = any)
ARGV[14] fingerprint checked on each job ('' = any)
ARGV[15] dry run (0/1): count, write nothing
ARGV[16] keep attempts (0/1)
Replies  {0, next time, next id, done 0/1, retried, skipped} | {-9, key, why} Corrupt |
         {-4, queue, limit, current, incoming} Backpressure | {-13, kinds, most} name a kind
Cost     O(batch * log N)
]]
--- @include rcall
--- @include call_chunked
--- @include K.unique
--- @include K.limits
--- @include K.retained
--- @include K.held
--- @include now_ms
--- @include flush_counts
--- @include unfinished
--- @include wake
--- @include E_BACKPRESSURE
--- @include index_select
--- @include index_selection
--- @include need
--- @include structure_error
--- @include bulk_load
--- @include bulk_reply
--- @include available_adds
--- @include flush_available
--- @include bulk_route
--- @include bulk_make_available
--- @include bulk_index_moves
local P = KEYS[1]
local s = index_selection(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10],
  ARGV[11], ARGV[12], ARGV[13], ARGV[14])
local dry, keep = ARGV[15] == '1', ARGV[16] == '1'
local RETRYABLE = { archived = true, undecodable = true, cancelled = true, quarantined = true, completed = true }
-- What a retry reads of a job: its state, where it is filed, its route and rank, its
-- strict unique key, and the times bulk_make_available keeps its creation time from.
local FIELDS = { 'state', 'held', 'queue', 'kind', 'part', 'tags', 'fp', 'sticky', 'prio', 'ukey', 'uwin', 'sched',
  'created' }
local now = now_ms(P)
local ids, at, id, done = index_select(P, s)
if not ids then return at end
local loaded, skipped = bulk_load(P, ids, s.state, FIELDS)
need(K.limits(P), 'hash')
need(K.unique(P), 'hash')
-- The batch only adds to partition sets: one ZADD per partition (flush_available).
available_adds = {}
local routes = {}
local jobs, taken = {}, {}
for _, j in ipairs(loaded) do
  local jid = j.id
  local ok = RETRYABLE[j.state]
  if ok and j.ukey ~= '' and j.uwin == 0 then
    -- The strict key must be free or still this job's, and not taken by another of the batch.
    local hid = rcall('HGET', K.unique(P), j.ukey)
    if (hid and hid ~= jid) or taken[j.ukey] then ok = false else taken[j.ukey] = true end
  end
  if ok then
    jobs[#jobs + 1] = j
    j.route = bulk_route(P, routes, j)
    if j.fp ~= '' then need(K.held(P, j.fp), 'set') end
  else
    skipped = skipped + 1
  end
end
local bad = structure_error()
if bad then return bad end
if #jobs > 0 then
  local limit = rcall('HGET', K.limits(P), s.queue)
  if limit then
    limit = tonumber(limit)
    local current = unfinished(P, s.queue)
    if current + #jobs > limit then return { E_BACKPRESSURE, s.queue, limit, current, #jobs } end
  end
end
if dry then return bulk_reply(at, id, done, #jobs, skipped) end

local unretained = {}
for i, j in ipairs(jobs) do
  local jid, k = j.id, j.key
  unretained[i] = jid
  if keep then
    rcall('HDEL', k, 'fin')
  else
    rcall('HDEL', k, 'fin', 'attempt', 'crash', 'snz')
  end
  if j.ukey ~= '' and j.uwin == 0 then rcall('HSET', K.unique(P), j.ukey, jid) end
  bulk_make_available(P, jid, k, j, j.route, now)
end
bulk_index_moves(P, routes, s.state, now)
if #jobs > 0 then
  call_chunked(rcall, 'ZREM', K.retained(P), unretained, 1000)
  wake(P, s.queue)
end
flush_available()
flush_counts(P)
return bulk_reply(at, id, done, #jobs, skipped)
