--[[
bulk_retry.lua: an operator retries a batch of the finished jobs (archived, undecodable,
cancelled, quarantined, completed and retained) that a filter selects through the job
indexes (index_select in lib.lua), as retry.lua retries one: each becomes available now
on its queue, its attempts from zero unless kept, out of the retained index, a completed
job without the result of the run the retry supersedes. A job whose
strict unique key another job now holds is skipped. The queue's limit on unfinished jobs
applies to the batch as to an enqueue of it: over the limit, the whole batch is refused.
A quarantined job's fingerprint stays quarantined (the job is held with its siblings).
The batch is all or nothing: every structure its writes touch is checked first. A dry run
only counts.

KEYS[1]  namespace prefix; derived keys (lib.lua): q:<queue>:kinds,
         q:<queue>:ix:<state>:<kind>[\x1f<dim>\x1f<value>], q:<queue>:pc:<part>,
         job:<id>, result:<id>, scheduled, retained, unique, quarantine, held:<fp>, limits, clock,
         q:<queue>:{counts,ring,drr,p:<part>,wake}, q:<queue>:w:<worker>:{ring,drr,p:<part>}
ARGV[1]  queue
ARGV[2]  state (archived, undecodable, cancelled, quarantined, completed)
ARGV[3..14] the rest of the filter and the batch, as ARGV[3..14] of list_jobs.lua (from
         Store.selection, for index_selection): kind, index dimension and value, order
         ('asc'), batch size (at most 1000), budget, cursor time and id, entered at or
         before (store ms), partition, tag, fingerprint
ARGV[15] dry run (0/1): count, write nothing
ARGV[16] keep attempts (0/1)
ARGV[17] jobs the dry run's earlier batches counted (0 in a run): they would be
         unfinished when this batch came, as the run's earlier batches are
Replies  {0, next time, next id, done 0/1, retried, skipped} | {-9, key, why} Corrupt |
         {-4, queue, limit, current, incoming} Backpressure | {-13, kinds, most} name a kind
Cost     O(batch * log N)
]]
--- @include rcall
--- @include subtable
--- @include call_chunked
--- @include K.job
--- @include K.result
--- @include K.unique
--- @include K.limits
--- @include K.retained
--- @include K.held
--- @include now_ms
--- @include ms_text
--- @include ms_texts
--- @include MAX_SAFE
--- @include QUEUE_DEFAULT
--- @include flush_counts
--- @include count_delta
--- @include unfinished
--- @include wake
--- @include E_BACKPRESSURE
--- @include index_select
--- @include index_selection
--- @include need
--- @include structure_error
--- @include bulk_reply
--- @include is_quarantined
--- @include move_count
--- @include index_move
--- @include index_move_all
--- @include rank
--- @include ring_contains
--- @include ring_push_back
--- @include partition_of
--- @include need_leave_state
--- @include need_available
local P = KEYS[1]
local s = index_selection(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10],
  ARGV[11], ARGV[12], ARGV[13], ARGV[14])
local dry, keep = ARGV[15] == '1', ARGV[16] == '1'
local counted = tonumber(ARGV[17]) or 0
local RETRYABLE = { archived = true, undecodable = true, cancelled = true, quarantined = true, completed = true }
local now = now_ms(P)
local ids, at, id, done = index_select(P, s)
if not ids then return at end
need(K.limits(P), 'hash')
need(K.unique(P), 'hash')
local from = s.state
local retryable = RETRYABLE[from]
local floor = math.floor

-- int_field turns row v's field i into an integer in [lo, hi], 0 when absent; false when
-- the stored text is not one (the job is then skipped as corrupt).
local function int_field(v, i, lo, hi)
  local x = v[i]
  if not x then
    v[i] = 0
    return true
  end
  x = tonumber(x)
  if not x or x ~= floor(x) or x < lo or x > hi then return false end
  v[i] = x
  return true
end

-- Read phase. Each job is read with one HMGET into a row that the call keeps as it is:
-- the reply's own table, its fields at these positions, absent ones false. A table per
-- job made from the row, and a Lua call or two per field, cost a bulk retry more Redis
-- instructions than its commands (bench/callgrind -bulk).
local STATE, HELD, QUEUE, KIND, PART, TAGS, FP, STICKY, PRIO, UKEY, UWIN, SCHED, CREATED =
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
-- The retried jobs, in order: their rows, ids, hashes' keys, and routes. A route is
-- where the jobs of one partition become available, {pz, ring, rs, q, part, adds =
-- {score, member, ...} (its partition set's new members), ix = kind -> ids (the jobs
-- whose index entries and counts move together), n = its jobs not held}, by queue ->
-- sticky worker -> partition in by_route, in order in routes.
local rows, rids, rkeys, rroutes, n = {}, {}, {}, {}, 0
local routes, by_route = {}, {}
local skipped = 0
local taken = nil -- strict unique keys the batch takes, key -> true
for i = 1, #ids do
  local jid = ids[i]
  local k = K.job(P, jid)
  local v = redis.pcall('HMGET', k, 'state', 'held', 'queue', 'kind', 'part', 'tags', 'fp', 'sticky', 'prio', 'ukey',
    'uwin', 'sched', 'created')
  -- Still filed in the selected state (a held job is filed as held), and its numbers
  -- whole and in range (JOB_RANGES), as load_job_checked would have them.
  local ok = not v.err and v[STATE] == from and v[HELD] ~= '1' and retryable
  if ok then
    ok = int_field(v, PRIO, -2147483648, 2147483647) and int_field(v, UWIN, 0, MAX_SAFE)
      and int_field(v, SCHED, 0, MAX_SAFE)
  end
  if ok then
    local ukey = v[UKEY]
    if ukey and ukey ~= '' and v[UWIN] == 0 then
      -- The strict key must be free or still this job's, and not taken by another of the batch.
      local hid = rcall('HGET', K.unique(P), ukey)
      if not taken then taken = {} end
      if (hid and hid ~= jid) or taken[ukey] then ok = false else taken[ukey] = true end
    end
  end
  if ok then
    local q, sticky, part, fp = v[QUEUE] or QUEUE_DEFAULT, v[STICKY] or '', v[PART] or '', v[FP] or ''
    local by_part = subtable(subtable(by_route, q), sticky)
    local r = by_part[part]
    if not r then
      -- The structures the route's writes touch, needed once for all its jobs.
      local j = { state = from, held = '', queue = q, sticky = sticky, part = part, fp = fp, ukey = v[UKEY] or '',
        uwin = v[UWIN] }
      need_leave_state(P, j)
      need_available(P, j)
      local pz, ring, rs = partition_of(P, q, sticky, part)
      r = { pz = pz, ring = ring, rs = rs, q = q, part = part, adds = {}, ix = {}, n = 0 }
      by_part[part] = r
      routes[#routes + 1] = r
    end
    if fp ~= '' then need(K.held(P, fp), 'set') end
    n = n + 1
    rows[n], rids[n], rkeys[n], rroutes[n] = v, jid, k, r
  else
    skipped = skipped + 1
  end
end
local bad = structure_error()
if bad then return bad end
if n > 0 then
  local limit = rcall('HGET', K.limits(P), s.queue)
  if limit then
    limit = tonumber(limit)
    local current = unfinished(P, s.queue) + counted
    if current + n > limit then return { E_BACKPRESSURE, s.queue, limit, current, n } end
  end
end
if dry then return bulk_reply(at, id, done, n, skipped) end

-- Write phase: each job becomes available now, as retry.lua and make_available make one,
-- its partition set's member, index entries and count moved with its route's.
local now_text = ms_texts[now] or ms_text(now)
for i = 1, n do
  local v, jid, k, r = rows[i], rids[i], rkeys[i], rroutes[i]
  if keep then
    rcall('HDEL', k, 'fin')
  else
    rcall('HDEL', k, 'fin', 'attempt', 'crash', 'snz')
  end
  if from == 'completed' then rcall('DEL', K.result(P, jid)) end
  local ukey = v[UKEY]
  if ukey and ukey ~= '' and v[UWIN] == 0 then rcall('HSET', K.unique(P), ukey, jid) end
  local fp, tags = v[FP] or '', v[TAGS] or ''
  local held = fp ~= '' and is_quarantined(P, fp)
  -- One HSET of what the job's case needs. A job hash leaves out 'created' when it
  -- equals 'sched' (keep_created): moving 'sched' stores it.
  if v[CREATED] then
    if held then rcall('HSET', k, 'state', 'available', 'sched', now_text, 'held', '1')
    else rcall('HSET', k, 'state', 'available', 'sched', now_text) end
  else
    local created = ms_texts[v[SCHED]] or ms_text(v[SCHED])
    if held then rcall('HSET', k, 'state', 'available', 'sched', now_text, 'held', '1', 'created', created)
    else rcall('HSET', k, 'state', 'available', 'sched', now_text, 'created', created) end
  end
  local kind = v[KIND] or ''
  if held or fp ~= '' or tags ~= '' then
    -- Held (available, but counted "held" until the fingerprint is released), or filed
    -- under a fingerprint or tags: moved on its own.
    local to = held and 'held' or 'available'
    local j = { queue = r.q, kind = kind, part = r.part, tags = tags, fp = fp }
    move_count(P, r.q, from, to)
    index_move(P, jid, j, from, to, now)
    if held then rcall('SADD', K.held(P, fp), jid) end
  else
    local ix = r.ix[kind]
    if not ix then
      ix = {}
      r.ix[kind] = ix
    end
    ix[#ix + 1] = jid
  end
  if not held then
    r.n = r.n + 1
    local a, m = r.adds, #r.adds
    a[m + 1], a[m + 2] = '0', rank(v[PRIO], now, jid)
    if r.n == 1 and not ring_contains(r.ring, r.part) then
      -- The partition joins its ring with the route's first job, as index_available has it.
      ring_push_back(r.ring, r.part)
      rcall('HDEL', r.rs, 'cr')
    end
  end
end
for _, r in ipairs(routes) do
  local moved = 0
  for kind, ix in pairs(r.ix) do
    index_move_all(P, r.q, kind, r.part, ix, from, 'available', now)
    moved = moved + #ix
  end
  if moved > 0 then
    -- move_count of each of them, in one step.
    local d = count_delta[r.q]
    if not d then
      d = {}
      count_delta[r.q] = d
    end
    d[from] = (d[from] or 0) - moved
    d.available = (d.available or 0) + moved
  end
  call_chunked(rcall, 'ZADD', r.pz, r.adds, 2000)
end
if n > 0 then
  call_chunked(rcall, 'ZREM', K.retained(P), rids, 1000)
  wake(P, s.queue)
end
flush_counts(P)
return bulk_reply(at, id, done, n, skipped)
