--[[
enqueue.lua: writes a batch of jobs, all or nothing.

Checks, in order, before any write:
  1. ids: an existing id with the same kind+fingerprint+queue is replayed (success, no
     write); any other existing id is IdConflict.
  2. per new job: a quarantined fingerprint is Quarantined; a held unique key
     (strict: until the holder is terminal; throttle: until the window ends) is
     Duplicate. In a call of one job the duplicate is that job's outcome: debounce / the
     replace mask is applied to a holder that is still scheduled, available or
     retryable (that replacement is the whole effect). In a batch of more jobs the
     duplicate refuses the batch, and a refused batch writes nothing: no replacement.
  3. backpressure: a queue whose unfinished jobs plus the batch's new jobs would pass
     its limit rejects the whole batch.
Then every new job is written: pending, scheduled (future) or available.

A job without a detail group has no partition, fingerprint, sticky worker, rate class,
unique key or tags, and every number at its default: each argument costs a call about 800
Redis instructions, and most jobs are plain.

Every structure a write touches is checked before the first write: an unusable one (a
key of the wrong type, a count that is not a number, a job hash with unusable data where
the batch must read it) refuses the batch with CorruptError and nothing is written.

KEYS[1]  namespace prefix "hg:{<ns>}:"; keys derived from it (lib.lua): job:<id>,
         queues, q:<queue>:{counts,ring,drr,p:<part>,w:<worker>:*,wake},
         scheduled, unique, throttle, throttle:expiry, quarantine, held:<fp>, limits, clock, counters
ARGV[1]  number of jobs n
ARGV[2]  detail groups m (0 when no job of the batch has more than the 4 arguments)
         then n groups of 4: id, kind, queue, payload;
         then m detail groups of 8: which job (1..n, each at most once), partition,
         fingerprint, sticky worker, rate class, unique field (scoped by Go, "" = none),
         tags ("\n"-joined), numbers ("" when every one is at its default, else these
         integers joined by ",", defaults in brackets: priority [0], scheduled_at ms [0 =
         now], retention ms [0], max attempts [25], schema version [1], weight [1],
         unique window ms [0], replace mask [0], debounce ms [0], pending [0, 1 =
         pending], delay ms [0; with scheduled_at 0: run at now + delay])
Replies  {0, state_1, scheduled_at_1, replayed_1 (0/1), ..., replayed_n}
         {-1, id}                                    IdConflict
         {-2, existing id, replaced 0/1, its state ("deleted" when gone),
          its scheduled_at ms}                       Duplicate
         {-3, fingerprint}                           Quarantined
         {-4, queue, limit, current, incoming}       Backpressure
Cost     O(n * log N): a constant number of commands per job.
]]
--- @include rcall
--- @include call_chunked
--- @include K.job
--- @include K.queues
--- @include K.scheduled
--- @include K.unique
--- @include K.throttle
--- @include K.throttle_expiry
--- @include K.limits
--- @include OK
--- @include E_ID_CONFLICT
--- @include E_DUPLICATE
--- @include E_QUARANTINED
--- @include E_BACKPRESSURE
--- @include now_ms
--- @include ms_text
--- @include is_quarantined
--- @include rank
--- @include str
--- @include move_count
--- @include flush_counts
--- @include unfinished
--- @include partition_of
--- @include ring_contains
--- @include need_ring_member
--- @include need_set_member
--- @include arg_int
--- @include edit_has
--- @include REPLACE_PAYLOAD
--- @include REPLACE_SCHEDULED_AT
--- @include REPLACE_PRIORITY
--- @include REPLACE_MAX_ATTEMPTS
--- @include ring_push_back
--- @include wake
--- @include unindex_available_job
--- @include load_job
--- @include schedule
--- @include make_available
--- @include safe_hmget
--- @include corrupt_reply
--- @include need
--- @include need_counts
--- @include K.wake
--- @include structure_error
--- @include need_available
--- @include load_job_checked
--- @include JOB_FIELDS
--- @include K.held
--- @include new_job_fields
--- @include write_payload
--- @include take_unique
--- @include unique_holder
--- @include count_event
--- @include index_move
--- @include index_note
--- @include index_kind_known
--- @include QUEUE_DEFAULT
local P = KEYS[1]
local n, m = tonumber(ARGV[1]), tonumber(ARGV[2])
local F = 4
local D = 8
local now = now_ms(P)
-- The group's numbers argument, when not "": eleven integers joined by ",".
local numbers = '^(-?%d+),(-?%d+),(-?%d+),(-?%d+),(-?%d+),(-?%d+),(-?%d+),(-?%d+),(-?%d+),(-?%d+),(-?%d+)$'

-- Where each job's detail group starts, by job.
local details = {}
for k = 1, m do
  local d = 2 + n * F + (k - 1) * D
  local i = tonumber(ARGV[d + 1])
  if not i or i < 1 or i > n or details[i] then
    return redis.error_reply('headgate: enqueue detail group for no job: ' .. tostring(ARGV[d + 1]))
  end
  details[i] = d
end

-- What each new job becomes (its state and run time: e.to, e.at) follows from its
-- arguments and the clock. A job's table gets every field the call sets later from its
-- constructor, which sizes it: a table that grows is made again, and tables made, grown
-- and collected are much of what a single enqueue costs Redis (bench/callgrind).
local jobs = {}
for i = 1, n do
  local b = 2 + (i - 1) * F
  local part, fp, sticky, rc, ukey, tags, nums = '', '', '', '', '', '', ''
  local d = details[i]
  if d then
    part, fp, sticky, rc, ukey, tags, nums =
      ARGV[d + 2], ARGV[d + 3], ARGV[d + 4], ARGV[d + 5], ARGV[d + 6], ARGV[d + 7], ARGV[d + 8]
  end
  -- The numbers travel as one argument: each argument costs a call about as much as a
  -- small command, and most jobs keep every number at its default.
  local prio, sched, ret, maxa, schema, weight, uwin, urepl, udeb, pending, delay =
    0, 0, '0', '25', '1', '1', 0, 0, 0, '0', 0
  if nums ~= '' then
    prio, sched, ret, maxa, schema, weight, uwin, urepl, udeb, pending, delay = string.match(nums, numbers)
    prio, sched, uwin, urepl, udeb, delay =
      arg_int(prio), arg_int(sched), arg_int(uwin), arg_int(urepl), arg_int(udeb), arg_int(delay)
  end
  local id = ARGV[b + 1]
  local at = sched
  if udeb > 0 then
    at = now + udeb
  elseif at == 0 then
    at = now + delay
  end
  local to = 'available'
  if pending == '1' then
    to = 'pending'
  elseif at > now then
    to = 'scheduled'
  end
  jobs[i] = {
    id = id, kind = ARGV[b + 2], queue = ARGV[b + 3], part = part, fp = fp,
    sticky = sticky, rc = rc, ukey = ukey, tags = tags, payload = ARGV[b + 4],
    prio = prio, sched = sched, ret = ret, maxa = maxa, schema = schema, weight = weight,
    uwin = uwin, urepl = urepl, udeb = udeb, delay = delay,
    key = K.job(P, id), at = at, to = to, state = false, replay = false, pz = false, ring = false,
  }
end

-- 1. ids. One EXISTS over a chunk of new ids, the common case, answers for all of them;
-- only a chunk with an existing id is looked at job by job.
local CHUNK = 500
for first = 1, n, CHUNK do
  local last = math.min(first + CHUNK - 1, n)
  local found
  if first == last then
    found = rcall('EXISTS', jobs[first].key)
  else
    local ks = {}
    for i = first, last do ks[#ks + 1] = jobs[i].key end
    found = rcall('EXISTS', unpack(ks))
  end
  if found > 0 then
    for i = first, last do
      local e = jobs[i]
      local have, why = safe_hmget(e.key, 'kind', 'fp', 'queue', 'state', 'sched')
      if not have then return corrupt_reply(e.key, why) end
      if have[1] then
        if have[1] ~= e.kind or str(have[2]) ~= e.fp or (have[3] or QUEUE_DEFAULT) ~= e.queue then
          return { E_ID_CONFLICT, e.id }
        end
        e.replay = true
        e.state, e.sched = have[4], tonumber(have[5]) or 0
      end
    end
  end
end

-- The structures the writes touch, checked before any write (lib.lua need). What each
-- new job becomes is known, so an available job's check skips the scheduled index. Keys
-- the batch only reads (quarantine, limits) need no check: a read that raises comes
-- before the first write. The checks of the queue set and of the ring answer the writes'
-- questions too: whether the queue is listed (or a queue that has the kind of its first
-- job is listed: index_kind_known), whether the partition is in its ring.
local queues_key, scheduled_key = K.queues(P), K.scheduled(P)
local unlisted = nil -- queue -> true: not in K.queues yet
local incoming, order = {}, {} -- queue -> its new jobs, for backpressure; queues in order
local route = nil -- the last new job checked: a job of the same route has its keys checked
local any_unique = false
for i = 1, n do
  local e = jobs[i]
  if not e.replay then
    local q = e.queue
    if not incoming[q] then
      incoming[q] = 0
      order[#order + 1] = q
      if not index_kind_known(P, q, e.kind) and need_set_member(queues_key, q) == false then
        unlisted = unlisted or {}
        unlisted[q] = true
      end
      need_counts(P, q)
    end
    incoming[q] = incoming[q] + 1
    if e.ukey ~= '' then any_unique = true end
    -- The job's partition, ring and wake-up list, whatever its state: a job that is not
    -- available yet becomes available there. The scheduled index only for a job that is
    -- not available now.
    if e.to ~= 'available' then need(scheduled_key, 'zset') end
    if route and route.queue == q and route.sticky == e.sticky and route.part == e.part then
      e.pz, e.ring = route.pz, route.ring
    else
      e.pz, e.ring = partition_of(P, q, e.sticky, e.part)
      need(e.pz, 'zset')
      need_ring_member(e.ring, e.part)
      need(K.wake(P, q), 'list')
      route = e
    end
  end
end
if any_unique then
  need(K.unique(P), 'hash')
  need(K.throttle(P), 'hash')
  need(K.throttle_expiry(P), 'zset')
end
local bad = structure_error()
if bad then return bad end

-- Applies debounce and the replace mask of a duplicate to its holder; true if it changed.
-- What it uses of the call comes as arguments: a function that captures none of the
-- call's locals is the cheaper to make on every call.
local function replace(P, now, hid, e)
  local h = load_job(P, hid)
  if not h or not (h.state == 'scheduled' or h.state == 'available' or h.state == 'retryable') then
    return false
  end
  -- The holder's structures, before the first write.
  need_counts(P, h.queue)
  need_available(P, h)
  local _, _, rs = partition_of(P, h.queue, h.sticky, h.part)
  need(rs, 'hash')
  if e.fp ~= '' then need(K.held(P, e.fp), 'set') end
  if structure_error() then return structure_error() end
  local hk = K.job(P, hid)
  index_note(P, hid, h)
  local replaced = false
  local state, sched, prio, fp = h.state, h.sched, h.prio, h.fp
  if e.udeb > 0 then
    rcall('HSET', hk, 'schema', e.schema, 'fp', e.fp, 'tags', e.tags)
    write_payload(hk, e.payload)
    fp = e.fp
    state, sched = 'scheduled', now + e.udeb
    replaced = true
  end
  if edit_has(e.urepl, REPLACE_PAYLOAD) then
    rcall('HSET', hk, 'schema', e.schema, 'fp', e.fp)
    write_payload(hk, e.payload)
    fp = e.fp
    replaced = true
  end
  if edit_has(e.urepl, REPLACE_SCHEDULED_AT) and state == 'scheduled' then
    sched = e.sched
    if sched == 0 then sched = now + e.delay end
    replaced = true
  end
  if edit_has(e.urepl, REPLACE_PRIORITY) then
    prio = e.prio
    replaced = true
  end
  if edit_has(e.urepl, REPLACE_MAX_ATTEMPTS) then
    rcall('HSET', hk, 'maxa', e.maxa)
    replaced = true
  end
  if not replaced then return false end
  -- Re-file the holder under its new state, time and priority.
  if h.state == 'available' then unindex_available_job(P, hid, h) end
  rcall('HSET', hk, 'prio', prio)
  h.prio, h.fp, h.held = prio, fp, ''
  if state == 'available' then
    make_available(P, hid, h, now)
  else
    schedule(P, hid, h, state, sched)
  end
  return true
end

-- 2. quarantine and uniqueness
for i = 1, n do
  local e = jobs[i]
  if not e.replay then
    if is_quarantined(P, e.fp) then
      return { E_QUARANTINED, e.fp }
    end
    if e.ukey ~= '' then
      local hid = unique_holder(P, e.ukey, e.uwin, now)
      if hid then
        local replaced = 0
        -- Only a call of one job replaces: a batch refused by its duplicate writes nothing.
        if n == 1 and (e.urepl > 0 or e.udeb > 0) then
          -- The holder must be usable: its data is read and its indexes are moved.
          local _, why = load_job_checked(P, hid, JOB_FIELDS)
          if why then return corrupt_reply(K.job(P, hid), why) end
          local r = replace(P, now, hid, e)
          if type(r) == 'table' then return r end
          if r then replaced = 1 end
        end
        flush_counts(P)
        -- The holder as it is now, so the producer needs no second read. A throttle
        -- window can outlive its holder.
        local hs = rcall('HMGET', K.job(P, hid), 'state', 'sched')
        return { E_DUPLICATE, hid, replaced, hs[1] or 'deleted', hs[2] or 0 }
      end
    end
  end
end

-- 3. backpressure: incoming counts the new jobs of each queue
for i = 1, #order do
  local q = order[i]
  local limit = rcall('HGET', K.limits(P), q)
  if limit then
    limit = tonumber(limit)
    local current = unfinished(P, q)
    if current + incoming[q] > limit then
      count_event(P, 'backpressure:' .. q, 1)
      return { E_BACKPRESSURE, q, limit, current, incoming[q] }
    end
  end
end

-- 4. write
local now_text = ms_text(now) -- the index's entry time too: formatted once
-- In a batch: partition ZSET -> score/rank pairs of its new jobs (the ZSETs in order at
-- 1..), and the queues to wake. A job alone is filed and wakes its queue at once.
local filed, woken = nil, nil
for i = 1, n do
  local e = jobs[i]
  if not e.replay then
    e.sched, e.state = e.at, e.to
    -- Text, not Lua numbers, goes to redis.call where it can: a number is formatted on
    -- every call.
    local sched_text = now_text
    if e.sched ~= now then sched_text = string.format('%d', e.sched) end
    take_unique(P, e, now)
    rcall('HSET', e.key, unpack(new_job_fields(e, sched_text, now_text)))
    if unlisted and unlisted[e.queue] then
      rcall('SADD', queues_key, e.queue)
      unlisted[e.queue] = nil
    end
    move_count(P, e.queue, nil, e.state)
    index_move(P, e.id, e, nil, e.state, now)
    if e.state == 'scheduled' then
      rcall('ZADD', scheduled_key, sched_text, e.id)
    elseif e.state == 'available' then
      if n == 1 then
        rcall('ZADD', e.pz, '0', rank(e.prio, e.sched, e.id))
        if not ring_contains(e.ring, e.part) then ring_push_back(e.ring, e.part) end
        wake(P, e.queue)
      else
        -- Filed below, one ZADD per partition.
        if not filed then filed, woken = {}, {} end
        local pz = e.pz
        local ranks = filed[pz]
        if not ranks then
          ranks = { ring = e.ring, part = e.part }
          filed[pz] = ranks
          filed[#filed + 1] = pz
        end
        ranks[#ranks + 1] = '0'
        ranks[#ranks + 1] = rank(e.prio, e.sched, e.id)
        woken[e.queue] = true
      end
    end
  end
end
if filed then
  for i = 1, #filed do
    local ranks = filed[filed[i]]
    call_chunked(rcall, 'ZADD', filed[i], ranks, 2 * CHUNK)
    if not ring_contains(ranks.ring, ranks.part) then ring_push_back(ranks.ring, ranks.part) end
  end
  for q in pairs(woken) do wake(P, q) end
end
flush_counts(P)
if n == 1 then
  local e = jobs[1]
  return { OK, e.state, e.sched, e.replay and 1 or 0 }
end
local reply = { OK }
for i = 1, n do
  local e = jobs[i]
  reply[#reply + 1] = e.state
  reply[#reply + 1] = e.sched
  reply[#reply + 1] = e.replay and 1 or 0
end
return reply
