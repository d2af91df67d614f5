--[[
admit.lua: leases up to `capacity` available jobs to one worker.

Queues are served in the order given; paused queues are skipped. Inside a queue,
partitions take turns from a ring (deficit round robin): the partition at the head of the
ring gets `quantum` weight units of credit per turn, spends it on its jobs in rank order
(priority DESC, scheduled_at ASC, id ASC), then goes to the back of the ring carrying any
credit it could not spend. A turn cut short by capacity continues on the next call. Jobs
pinned to this worker have their own ring, visited in alternation with the shared one;
jobs pinned to other workers are in rings this script never reads.

When a whole round of the ring's turns spent nothing because every head job is heavier
than its partition's credit, the ring skips the rounds that would spend nothing as well:
every credit grows by the rounds the nearest partition still needs, less the one its next
turn gives, in one step (the standard DRR shortcut). The step is a ring-wide offset ("b",
added to every stored credit), so it touches no partition, and the shares are those of
plain DRR.

Each candidate is judged on its own, as in the reference (`admissible()` per job), and a
job that cannot go now never hides the jobs behind it:
- its fingerprint is quarantined: set aside in held:<fp> (counted "held") until an
  operator releases the fingerprint;
- its rate class lacks its weight: parked in parked:<class> (scored by weight) and the
  turn goes on. The class enters `starved`, scored by when its bucket will hold the
  lightest parked job's weight; each call first returns the parked jobs of due classes to
  their partitions, lightest first, as many as the bucket can pay, at most capacity + 8.
  A job heavier than its class's burst can never run at the current limit: it is parked
  as unrunnable (counted "unrunnable", a part of "available") and stays parked until
  SetRateLimit or RemoveRateLimit makes the class due again;
- it has crashed before (crash attempt > 0) and the call has no probation slot left
  (ARGV[7]), or its fingerprint is at the namespace's in-flight cap (policy fp_inflight):
  left in place and looked past.

Corrupt data (Redis does not roll back a script that raises): before the first write the
call reads starved, the policy and paused (a wrong type raises there, nothing written)
and checks what it writes later (leases, quarantine, fprunning under a cap, each served
queue's counts, wake, rings and ring state, the partitions of each ring's first turns,
the parking of due classes); a bad one refuses the call with E_CORRUPT, nothing written.
Data met later is read without raising: a job whose hash is not a hash or holds an
unusable number is removed from its partition (or parking) and parked in `corrupt` with
the reason; a job whose rate bucket, held set, parking, fingerprint count or partition
is unusable, and a partition past the first ones that is not a ZSET, is looked past.

Admission increments the job's fence, sets it running under the lease (with the worker,
"by", which why.lua reports with the admission time: the entry time of the running jobs'
index) and charges its
rate class its weight; under a fingerprint cap it counts the job in fprunning (released
by drop_lease and delete_job). A call that stops at capacity pushes a wake-up token, so
the next idle worker comes for the rest.

KEYS[1]  namespace prefix; derived keys (lib.lua): paused, clock, quarantine, held:<fp>,
         rate:<class>, parked:<class>, starved, policy, fprunning, leases, job:<id>,
         corrupt, admission:<lease id>, q:<queue>:{counts,ring,drr,p:<part>,wake,adm:<minute>},
         q:<queue>:w:<worker>:{ring,drr,p:<part>}, counters
ARGV[1]  worker id ("" = the worker takes no pinned work)
ARGV[2]  lease id: unique to the call. The call records what it leased under it
         (admission:<lease id>, for the lease duration), and a second call with the same
         lease id is a repeat of the first: it returns those of the first call's jobs that
         are still running under it, and leases nothing.
ARGV[3]  capacity (jobs)
ARGV[4]  lease duration ms
ARGV[5]  quantum (weight units per partition turn)
ARGV[6]  visit budget: the most jobs examined in this call
ARGV[7]  probation slots: the most crashed jobs this call admits (-1 = no limit)
ARGV[8]  number of queues m; ARGV[9..8+m] queue names
Replies  {0, id, hash, fence, lease expiry ms, id, hash, ...}, four entries a job, flat (a
         table per job costs Redis its making and its reply): hash is the job's HGETALL
         list as it was before admission; state, lease, fence and expiry are what
         admission set (fence and expiry as integers or their decimal text) |
         {-9, key, why} a structure is corrupt, nothing written
Cost     O((budget + capacity) * log N): every examined or returned job is a bounded
         number of commands; at most `budget` jobs are examined and capacity + 8 returned
         from parking, from at most 4 due classes.
]]
--- @include rcall
--- @include K.job
--- @include K.ring
--- @include K.ring_state
--- @include K.partition
--- @include K.pinned_ring
--- @include K.pinned_ring_state
--- @include K.pinned_partition
--- @include K.leases
--- @include zadd_skiplist
--- @include K.held
--- @include K.paused
--- @include OK
--- @include now_ms
--- @include is_quarantined
--- @include rank_id
--- @include subtable
--- @include num
--- @include move_count
--- @include move_counts
--- @include flush_counts
--- @include ring_push_back
--- @include ring_remove
--- @include wake
--- @include JOB_DEFAULTS
--- @include load_bucket
--- @include save_bucket
--- @include K.parked
--- @include K.starved
--- @include K.policy
--- @include K.fp_running
--- @include K.quarantine
--- @include K.rate
--- @include K.counts
--- @include K.wake
--- @include partition_of
--- @include index_available
--- @include K.corrupt
--- @include park_corrupt
--- @include safe_hmget
--- @include key_ok
--- @include bad_job_field
--- @include load_job_checked
--- @include counts_ok
--- @include corrupt_reply
--- @include count_event
--- @include index_move
--- @include tags_unindexed
--- @include index_move_all
--- @include JOB_RANGES
--- @include K.admission
--- @include admission_record
--- @include K.admitted_in
--- @include ADMITTED_ALL
--- @include ADMITTED_KEEP_MS
local P = KEYS[1]
local worker, lease_id = ARGV[1], ARGV[2]
local capacity, lease_ms = tonumber(ARGV[3]), tonumber(ARGV[4])
local quantum, budget = tonumber(ARGV[5]), tonumber(ARGV[6])
local crashed_slots = tonumber(ARGV[7])
local nq = tonumber(ARGV[8])
local now = now_ms(P)
local expires = now + lease_ms
-- Text, not Lua numbers, goes to redis.call where it can: a number is formatted on every call.
local expires_text = string.format('%d', expires)

local MAX_WEIGHT = 1048576 -- as MaxWeight in envelope.go
local unpark_classes = 4   -- due classes looked at per call
local reply = { OK }
local admitted = 0
-- This minute's admissions by queue and partition, added to q:<queue>:adm:<minute> at the
-- end (the tenants page's share of admissions).
local minute = math.floor(now / 60000)
local admitted_by = {}
-- Queue -> kind -> partition -> the ids admitted of the jobs without fingerprint or tags,
-- whose index entries move together at the end (index_move_all).
local plain_admitted = {}
local plain_q, plain_kind, plain_part, plain_ids = nil, nil, nil, nil -- the list of the last plain job admitted
local buckets = {}
local leases = {}
local last_queue = nil
local fp_cap = 0 -- the per-fingerprint in-flight cap (policy fp_inflight; 0 = off)
local due = {} -- classes whose parked jobs are due, read before the first write
local touched = {} -- classes whose parked jobs changed: class -> true, or 'more' when some are due now

-- A class's bucket, read once per call: false when the class is unlimited, 'corrupt'
-- when its hash is not one or holds a field that is not a usable integer.
local BUCKET_FIELDS = { 'tokens', 'burst', 'limit', 'window', 'refilled' }
local function bucket(class)
  local b = buckets[class]
  if b == nil then
    local v = safe_hmget(K.rate(P, class), unpack(BUCKET_FIELDS))
    b = false
    if not v then
      b = 'corrupt'
    elseif v[2] then
      for i = 1, #BUCKET_FIELDS do
        local n = tonumber(v[i])
        if v[i] and (not n or n ~= math.floor(n) or n < 0 or n > 9007199254740991) then b = 'corrupt' end
      end
      if b ~= 'corrupt' then b = load_bucket(P, class, now) or false end
    end
    buckets[class] = b
  end
  return b
end

-- Charges a rate class: 'ok', 'short' when it lacks the tokens, 'corrupt' when its bucket
-- cannot be read.
local function rate_ok(class, weight)
  if class == '' then return 'ok' end
  local b = bucket(class)
  if not b then return 'ok' end
  if b == 'corrupt' then return 'corrupt' end
  if b.tokens < weight then return 'short' end
  b.tokens = b.tokens - weight
  return 'ok'
end

-- Whether a key met mid-call can take this call's writes, asked once per key.
local writable = {}
local function can_write(key, typ)
  local ok = writable[key]
  if ok == nil then
    ok = key_ok(key, typ)
    writable[key] = ok
  end
  return ok
end

-- Whether a queue's counts can take HINCRBY, asked once per queue.
local counts_checked = {}
local function counts_fine(q)
  local ok = counts_checked[q]
  if ok == nil then
    ok = counts_ok(P, q)
    counts_checked[q] = ok
  end
  return ok
end

-- The rings of queue q this worker reads: its pinned ring, then the shared one.
local function rings_of(q)
  local rings = {}
  if worker ~= '' then
    rings[#rings + 1] = {
      ring = K.pinned_ring(P, q, worker), state = K.pinned_ring_state(P, q, worker),
      partition = function(part) return K.pinned_partition(P, q, worker, part) end,
    }
  end
  rings[#rings + 1] = {
    ring = K.ring(P, q), state = K.ring_state(P, q),
    partition = function(part) return K.partition(P, q, part) end,
  }
  return rings
end

-- The read phase: every structure the call writes, and the partitions the first turns
-- visit, can take the writes; else the key and why. Paused queues are noted, and the
-- rings of the others kept with what was read of them.
local paused = {}
local rings = {}
local function corrupt_before_writes()
  -- Reads that raise on a key of the wrong type do so here, before any write.
  due = rcall('ZRANGEBYSCORE', K.starved(P), '-inf', now, 'LIMIT', 0, unpark_classes)
  fp_cap = num(rcall('HGET', K.policy(P), 'fp_inflight'))
  local global = { { K.leases(P), 'zset' }, { K.quarantine(P), 'hash' } }
  if fp_cap > 0 then global[#global + 1] = { K.fp_running(P), 'hash' } end
  for _, kt in ipairs(global) do
    if not can_write(kt[1], kt[2]) then return kt[1], 'is not a ' .. kt[2] end
  end
  for _, class in ipairs(due) do
    local pk = K.parked(P, class)
    if not can_write(pk, 'zset') then return pk, 'is not a zset' end
  end
  for i = 1, nq do
    local q = ARGV[8 + i]
    paused[q] = rcall('SISMEMBER', K.paused(P), q) == 1
    if not paused[q] then
      if not counts_fine(q) then return K.counts(P, q), 'is not a hash of integer counts' end
      if not can_write(K.wake(P, q), 'list') then return K.wake(P, q), 'is not a list' end
      rings[q] = rings_of(q)
      for _, r in ipairs(rings[q]) do
        -- The reads serve needs first double as the checks of the ring's and its state's
        -- types (a key of another type fails them), and serve reuses what they read
        -- unless unpark_due changed the rings meanwhile.
        local parts = redis.pcall('ZRANGE', r.ring, 0, capacity + 7)
        if parts.err then return r.ring, 'is not a zset' end
        writable[r.ring] = true
        local state_len = redis.pcall('HLEN', r.state)
        if type(state_len) ~= 'number' then return r.state, 'is not a hash' end
        writable[r.state] = true
        r.first, r.state_len = parts, state_len
        for _, part in ipairs(parts) do
          local pz = r.partition(part)
          if not can_write(pz, 'zset') then return pz, 'is not a zset' end
        end
      end
    end
  end
  return nil
end

-- The running counts the per-fingerprint in-flight cap (fp_cap, read with the policy
-- before the first write) is checked against.
local fp_counts = {}
local function fp_full(fp)
  if fp == '' then return false end
  if fp_cap <= 0 then return false end
  local n = fp_counts[fp]
  if n == nil then
    local v = rcall('HGET', K.fp_running(P), fp)
    n = tonumber(v) or 0
    -- A count HINCRBY cannot take: the fingerprint's jobs wait, looked past.
    if v and (not tonumber(v) or n ~= math.floor(n) or math.abs(n) > 9007199254740991) then n = 'corrupt' end
    fp_counts[fp] = n
  end
  return n == 'corrupt' or n >= fp_cap
end

-- The fields of a candidate's hash admission reads, each a slot of read_candidate's reply.
local CANDIDATE_FIELDS = { kind = 1, part = 2, tags = 3, fp = 4, rc = 5, weight = 6, crash = 7, fence = 8 }
local floor = math.floor

-- A candidate's hash h and the fields admission reads of it: what index_move files the
-- job under (kind, part, tags, fp) and rc, then weight, crash and fence as stored (false
-- when absent); or nil and why its data is unusable (nil, nil: it is gone). One pass over
-- the hash checks its numbers and reads the fields, into locals: a scan of the hash per
-- field read was a tenth of an admission's Redis instructions, and a table of them per
-- job a few percent more.
local function read_candidate(jk)
  local h = redis.pcall('HGETALL', jk)
  if h.err then return nil, 'job hash: ' .. tostring(h.err) end
  if #h == 0 then return nil, nil end
  local kind, part, tags, fp, rc, weight, crash, fence = '', '', '', '', '', false, false, false
  for i = 1, #h, 2 do
    local f, x = h[i], h[i + 1]
    local range = JOB_RANGES[f]
    if range then
      -- bad_job_field's check, inline: it passes most fields it is given.
      local n = tonumber(x)
      if not n or n ~= floor(n) or n < range[1] or n > range[2] then return nil, bad_job_field(f, x) end
    end
    local c = CANDIDATE_FIELDS[f]
    if c then
      if c == 1 then
        kind = x
      elseif c == 2 then
        part = x
      elseif c == 3 then
        tags = x
      elseif c == 4 then
        fp = x
      elseif c == 5 then
        rc = x
      elseif c == 6 then
        weight = x
      elseif c == 7 then
        crash = x
      else
        fence = x
      end
    end
  end
  return h, kind, part, tags, fp, rc, weight, crash, fence
end

-- The text of the fence that follows a stored one, formatted once per call and value.
local next_fences = {}
local function next_fence(fence)
  if not fence then return '1' end
  local t = next_fences[fence]
  if not t then
    t = string.format('%d', tonumber(fence) + 1)
    next_fences[fence] = t
  end
  return t
end

-- Parks an available job its class cannot pay for now ("u": heavier than the burst).
local function park(q, id, jk, class, weight)
  local b = bucket(class)
  local kind = 's'
  if weight > b.burst then
    kind = 'u'
    move_count(P, q, nil, 'unrunnable')
  end
  rcall('ZADD', K.parked(P, class), weight, id)
  rcall('HSET', jk, 'parked', kind)
  count_event(P, 'rate_limited:' .. class, 1)
  touched[class] = touched[class] or true
end

-- Returns the parked jobs of due classes to their partitions, lightest first, as many as
-- the bucket can pay (all, for a class no longer limited), at most capacity + 8.
local UNPARK_FIELDS = { 'state', 'queue', 'part', 'sticky', 'prio', 'sched', 'parked' }
local function unpark_due()
  local left = capacity + 8
  for _, class in ipairs(due) do
    touched[class] = true
    if left <= 0 then
      touched[class] = 'more'
    else
      local b = bucket(class)
      local tokens = nil
      if type(b) == 'table' then tokens = b.tokens end
      local pk = K.parked(P, class)
      local list = rcall('ZRANGE', pk, 0, left, 'WITHSCORES')
      local back = {}
      for i = 1, #list, 2 do
        local w = tonumber(list[i + 1])
        if #back >= left then
          touched[class] = 'more'
          break
        end
        if tokens and type(b) == 'table' then
          if w > tokens then break end
          tokens = tokens - w
        end
        back[#back + 1] = list[i]
      end
      local done = {}
      for _, id in ipairs(back) do
        local j, why = load_job_checked(P, id, UNPARK_FIELDS)
        done[#done + 1] = id
        if why then
          if can_write(K.corrupt(P), 'hash') then park_corrupt(P, id, why) else done[#done] = nil end
        elseif j and j.state == 'available' and j.parked ~= '' then
          local pz, ring, rs = partition_of(P, j.queue, j.sticky, j.part)
          if can_write(pz, 'zset') and can_write(ring, 'zset') and can_write(rs, 'hash') and counts_fine(j.queue) then
            rcall('HDEL', K.job(P, id), 'parked')
            if j.parked == 'u' then move_count(P, j.queue, 'unrunnable', nil) end
            index_available(P, id, j.queue, j.part, j.sticky, j.prio, j.sched)
          else
            done[#done] = nil -- its partition cannot take it: it stays parked
          end
        end
      end
      if #done > 0 then rcall('ZREM', pk, unpack(done)) end
      left = left - #back
    end
  end
end

-- Rescores a touched class in `starved`: when its bucket (as this call leaves it) will
-- hold the lightest parked job's weight; +inf when it never will at the current limit;
-- removed when nothing of it is parked.
local function reschedule(class, more)
  if not can_write(K.parked(P, class), 'zset') then return end
  local lightest = rcall('ZRANGE', K.parked(P, class), 0, 0, 'WITHSCORES')
  if #lightest == 0 then
    rcall('ZREM', K.starved(P), class)
    return
  end
  local w = tonumber(lightest[2])
  local b = buckets[class]
  local at = now
  if type(b) == 'table' and not more then
    if w > b.burst or b.limit <= 0 then
      at = '+inf'
    elseif w > b.tokens then
      at = b.refilled + math.ceil((w - b.tokens) * b.window / b.limit)
    end
  end
  if type(at) == 'number' then at = string.format('%d', at) end
  rcall('ZADD', K.starved(P), at, class)
end

-- One turn of `part`, the head of ring r: the partition spends its credit on its jobs
-- in rank order. Returns whether the turn admitted a job (or banked credit toward a heavy
-- one), and the rounds of credit it still needs when it spent nothing because its head
-- job is heavier than its credit (nil otherwise).
local function turn(r, q, part)
  local pz = r.partition(part)
  local dfield = 'd:' .. part
  local stored = nil
  if r.credits then stored = rcall('HGET', r.state, dfield) end
  local credit = 0
  if stored then credit = num(stored) + r.bonus end
  local continuing = r.turn == part
  if not continuing then credit = credit + quantum end
  r.turn = nil
  -- The only partition with work for this worker shares turns with no one: it takes
  -- what it can.
  local alone = r.alone and not stored
  if alone then credit = capacity * MAX_WEIGHT end

  local got, outcome, emptied = 0, 'done', false
  local skipped, heavy = 0, 0
  -- A partition past the ones the read phase checked that is not a ZSET is looked past.
  if not can_write(pz, 'zset') then outcome = 'exhausted' end
  while outcome == 'done' and credit >= 1 and admitted < capacity and budget > 0 do
    -- At most `credit` jobs are admitted (every weight is >= 1), but held, parked and
    -- looked-past jobs cost no credit, so a few more are read; one more tells whether
    -- the partition empties. Jobs looked past stay at the front, ahead of the range read.
    local want = math.min(math.min(capacity - admitted, credit) + 8, budget)
    local members = rcall('ZRANGE', pz, skipped, skipped + want)
    local removed = {}
    local skipped_now = 0
    local read = 0
    for i = 1, math.min(want, #members) do
      if credit < 1 or admitted >= capacity or budget <= 0 then break end
      local m = members[i]
      local id = rank_id(m)
      local jk = K.job(P, id)
      local h, kind, jpart, tags, fp, class, weight, crash, fence = read_candidate(jk)
      local why = nil
      if not h then why = kind end
      budget = budget - 1
      local crashed = false
      if h then
        weight = tonumber(weight) or JOB_DEFAULTS.weight
        crashed = crash and tonumber(crash) > 0
      end
      local rate = nil
      if not h and why and not can_write(K.corrupt(P), 'hash') then
        skipped_now = skipped_now + 1
      elseif not h then
        -- Unusable data: out of the partition, into `corrupt` with the reason.
        removed[#removed + 1] = m
        if why then park_corrupt(P, id, why) end
      elseif fp ~= '' and is_quarantined(P, fp) then
        if can_write(K.held(P, fp), 'set') then
          removed[#removed + 1] = m
          rcall('SADD', K.held(P, fp), id)
          rcall('HSET', jk, 'held', '1')
          move_count(P, q, 'available', 'held')
          index_move(P, id, { queue = q, kind = kind, part = jpart, tags = tags, fp = fp }, 'available', 'held', now)
        else
          skipped_now = skipped_now + 1
        end
      elseif (crashed and crashed_slots == 0) or (fp ~= '' and fp_full(fp)) then
        skipped_now = skipped_now + 1
      elseif weight > credit then
        outcome = 'carry'
        heavy = weight
        break
      elseif class == '' then
        rate = 'ok'
      else
        rate = rate_ok(class, weight)
      end
      if rate == 'corrupt' or (rate == 'short' and not can_write(K.parked(P, class), 'zset')) then
        skipped_now = skipped_now + 1
      elseif rate == 'short' then
        removed[#removed + 1] = m
        park(q, id, jk, class, weight)
      elseif rate == 'ok' then
        removed[#removed + 1] = m
        credit = credit - weight
        if crashed and crashed_slots > 0 then crashed_slots = crashed_slots - 1 end
        fence = next_fence(fence)
        local charged = class ~= '' and type(buckets[class]) == 'table'
        local counted = fp ~= '' and fp_cap > 0
        if charged or counted then
          local f = { 'HSET', jk, 'state', 'running', 'lease', lease_id, 'fence', fence }
          if worker ~= '' then
            f[#f + 1] = 'by'
            f[#f + 1] = worker
          end
          if charged then
            f[#f + 1] = 'charge'
            f[#f + 1] = weight
          end
          if counted then
            f[#f + 1] = 'fpi'
            f[#f + 1] = '1'
            rcall('HINCRBY', K.fp_running(P), fp, 1)
            fp_counts[fp] = fp_counts[fp] + 1
          end
          rcall(unpack(f))
        elseif worker ~= '' then
          rcall('HSET', jk, 'state', 'running', 'lease', lease_id, 'fence', fence, 'by', worker)
        else
          rcall('HSET', jk, 'state', 'running', 'lease', lease_id, 'fence', fence)
        end
        local nl = #leases
        leases[nl + 1] = expires_text
        leases[nl + 2] = id
        if fp == '' and (tags == '' or tags_unindexed(tags)) then
          -- Its index entries move with the others of its kind and partition at the end;
          -- the jobs of a turn mostly share one kind.
          if kind ~= plain_kind or jpart ~= plain_part or q ~= plain_q then
            plain_q, plain_kind, plain_part = q, kind, jpart
            plain_ids = subtable(subtable(subtable(plain_admitted, q), kind), jpart)
          end
          plain_ids[#plain_ids + 1] = id
        else
          index_move(P, id, { queue = q, kind = kind, part = jpart, tags = tags, fp = fp }, 'available', 'running', now)
        end
        local nr = #reply
        reply[nr + 1], reply[nr + 2], reply[nr + 3], reply[nr + 4] = id, h, fence, expires_text
        admitted = admitted + 1
        got = got + 1
      end
      read = i
    end
    if #removed > 0 then
      if skipped_now == 0 then
        -- What was removed is the range read, in order: remove it by rank.
        rcall('ZREMRANGEBYRANK', pz, skipped, skipped + #removed - 1)
      else
        rcall('ZREM', pz, unpack(removed))
      end
    end
    skipped = skipped + skipped_now
    if read == #members then
      -- Everything left was read: the partition emptied, or holds only jobs looked past.
      if skipped == 0 then emptied = true else outcome = 'exhausted' end
      break
    end
  end

  if got > 0 then
    move_counts(P, q, 'available', 'running', got)
    local by = admitted_by[q]
    if not by then
      by = {}
      admitted_by[q] = by
    end
    by[part] = (by[part] or 0) + got
  end
  if alone then
    if emptied then
      ring_remove(r.ring, part)
      r.size = 0
    end
    return got > 0, nil
  elseif emptied then
    -- An emptied partition leaves the ring and forgets its credit.
    ring_remove(r.ring, part)
    r.size = r.size - 1
    credit = 0
  elseif outcome == 'done' and credit >= 1 then
    -- Capacity or budget ran out mid-turn: the partition keeps the head and its credit.
    rcall('HSET', r.state, 'turn', part, dfield, credit - r.bonus)
    r.credits = true
    return true, nil
  else
    ring_push_back(r.ring, part)
    -- Nothing it holds can go now: like an empty partition, it banks no credit.
    if outcome == 'exhausted' then credit = 0 end
  end
  if credit > 0 then
    rcall('HSET', r.state, dfield, credit - r.bonus)
    r.credits = true
  elseif stored then
    rcall('HDEL', r.state, dfield)
  end
  if continuing then rcall('HDEL', r.state, 'turn') end
  if outcome == 'carry' and got == 0 then
    return true, math.ceil((heavy - credit) / quantum)
  end
  return got > 0 or outcome == 'carry', nil
end

-- Counts a turn toward a round that spent nothing (rounds: the rounds that partition
-- still needs; nil for a partition with nothing that can go), and takes the DRR shortcut
-- once the round is complete.
local function spent_nothing(r, rounds)
  if r.cr == 0 then r.cn = 0 end
  r.cr = r.cr + 1
  if rounds and (r.cn == 0 or rounds < r.cn) then r.cn = rounds end
  if r.cr >= r.size then
    if r.cn > 1 then r.bonus = r.bonus + (r.cn - 1) * quantum end
    r.cr, r.cn = 0, 0
  end
end

-- Serves the rings of one queue, alternating between them, until capacity or budget
-- runs out or every partition of every ring was passed over since its last admission.
local function serve(q, rings)
  local live, total = 0, 0
  for _, r in ipairs(rings) do
    -- What the read phase read of the ring holds unless unpark_due wrote to the rings.
    if #due > 0 then r.first = nil end
    if r.first and #r.first < capacity + 8 then
      r.size = #r.first
    else
      r.size = rcall('ZCARD', r.ring)
    end
    total = total + r.size
    r.bonus, r.cr, r.cn = 0, 0, 0
    if r.size > 0 then
      local st = r.state_len
      if not r.first then st = rcall('HLEN', r.state) end
      r.credits = st > 0
      if r.credits then
        local v = rcall('HMGET', r.state, 'turn', 'b', 'cr', 'cn')
        r.turn = v[1] or nil
        r.bonus, r.cr, r.cn = num(v[2]), num(v[3]), num(v[4])
      end
      r.saved = { r.bonus, r.cr, r.cn }
      r.heads, r.pos, r.passed = {}, 1, 0
      live = live + 1
    end
  end
  for _, r in ipairs(rings) do r.alone = r.size == 1 and total == 1 end
  -- With pinned and shared work both waiting, the rings alternate, and the ring after
  -- the last one served goes first on the next call.
  local both = live == 2
  local idx = 0
  if both and rcall('HGET', rings[1].state, 'next') == 'shared' then idx = 1 end
  while live > 0 and admitted < capacity and budget > 0 do
    idx = idx % #rings + 1
    local r = rings[idx]
    if r.size > 0 and r.passed < r.size then
      if r.pos > #r.heads then
        -- The next partitions in turn order; those served go to the back behind them.
        local n = math.min(r.size, capacity - admitted + 8)
        if r.first then
          -- No turn of this ring has run yet: the front the read phase read is its front.
          r.heads = { unpack(r.first, 1, n) }
          r.first = nil
        else
          r.heads = rcall('ZRANGE', r.ring, 0, n - 1)
        end
        r.pos = 1
      end
      local part = r.heads[r.pos]
      r.pos = r.pos + 1
      if not part then
        r.passed, r.size = 0, 0
      else
        local before, size = admitted, r.size
        local progress, rounds = turn(r, q, part)
        if admitted > before or r.size ~= size then
          r.cr, r.cn = 0, 0
        elseif r.size > 0 and not r.alone then
          spent_nothing(r, rounds)
        end
        if progress then r.passed = 0 else r.passed = r.passed + 1 end
      end
      if r.passed >= r.size then live = live - 1 end
    end
  end
  for _, r in ipairs(rings) do
    if r.saved then
      if r.size == 0 then
        -- An empty ring has no credits to offset.
        if r.saved[1] ~= 0 or r.saved[2] ~= 0 then rcall('HDEL', r.state, 'b', 'cr', 'cn') end
      elseif r.bonus ~= r.saved[1] or r.cr ~= r.saved[2] or r.cn ~= r.saved[3] then
        -- Zeros are not stored: an empty state hash spares every turn a credit lookup.
        local set, del = { 'HSET', r.state }, { 'HDEL', r.state }
        for i, f in ipairs({ 'b', 'cr', 'cn' }) do
          local v = ({ r.bonus, r.cr, r.cn })[i]
          if v ~= 0 then
            set[#set + 1] = f
            set[#set + 1] = v
          elseif r.saved[i] ~= 0 then
            del[#del + 1] = f
          end
        end
        if #set > 2 then rcall(unpack(set)) end
        if #del > 2 then rcall(unpack(del)) end
      end
    end
  end
  if both then
    local nxt = 'pinned'
    if idx == 1 then nxt = 'shared' end
    rcall('HSET', rings[1].state, 'next', nxt)
  end
end

-- A repeat of a call Redis applied (go-redis resends a script whose reply a broken
-- connection lost) returns the jobs that call leased that are still running under it,
-- with their fences and lease expiries, and leases nothing else: the first reply's jobs
-- are not left to expire and be charged a crash. A job acked, reclaimed or expired since
-- is left out. Nothing is written.
local admitted_before = admission_record(P, lease_id)
if admitted_before then
  for _, e in ipairs(admitted_before) do
    local id, fence = e[1], e[2]
    local jk = K.job(P, id)
    local v = redis.pcall('HMGET', jk, 'state', 'lease', 'fence')
    local exp = redis.pcall('ZSCORE', K.leases(P), id)
    if type(v) == 'table' and v[1] == 'running' and v[2] == lease_id and tonumber(v[3]) == fence
      and tonumber(exp) and tonumber(exp) > now then
      local h = redis.pcall('HGETALL', jk)
      if type(h) == 'table' and not h.err then
        local nr = #reply
        reply[nr + 1], reply[nr + 2], reply[nr + 3], reply[nr + 4] = id, h, fence, tonumber(exp)
      end
    end
  end
  return reply
end

local bad_key, why = corrupt_before_writes()
if bad_key then return corrupt_reply(bad_key, why) end

unpark_due()

for i = 1, nq do
  if admitted >= capacity or budget <= 0 then break end
  local q = ARGV[8 + i]
  if not paused[q] then
    serve(q, rings[q])
    last_queue = q
  end
end

-- Stopped by capacity with work left: pass the wake-up on, so another idle worker
-- comes for the rest.
if admitted >= capacity and last_queue then wake(P, last_queue) end
if #leases > 0 then
  zadd_skiplist(rcall, K.leases(P), leases)
  -- The record a repeat of this call is answered from: the ids and fences, for as long
  -- as the leases last unrenewed. A repeat comes within go-redis's retries (seconds); by
  -- the time the record goes, every lease it names has expired or was renewed by a holder
  -- that got the reply, so no repeat can be owed any of them.
  local rec = {}
  for i = 2, #reply, 4 do
    rec[#rec + 1] = reply[i]
    rec[#rec + 1] = reply[i + 2]
  end
  rcall('SET', K.admission(P, lease_id), table.concat(rec, '\31'), 'PX', lease_ms)
end
-- The minute's admissions are figures for the tenants page, not state: a key or field
-- that cannot take them (corrupt data) loses this call's count, never its admissions, so
-- the writes are pcalls and nothing is read for them first.
for q, by in pairs(admitted_by) do
  local adm, n = K.admitted_in(P, q, minute), 0
  for part, c in pairs(by) do
    redis.pcall('HINCRBY', adm, part, c)
    n = n + c
  end
  -- The minute's key expires an hour after its first admission: set once, when the
  -- call's count is all it holds (or it cannot count), not on every call.
  local all = redis.pcall('HINCRBY', adm, ADMITTED_ALL, n)
  if all == n or type(all) ~= 'number' then redis.pcall('PEXPIRE', adm, ADMITTED_KEEP_MS) end
end
for _, b in pairs(buckets) do
  if type(b) == 'table' then save_bucket(b) end
end
for class, more in pairs(touched) do reschedule(class, more == 'more') end
for q, by_kind in pairs(plain_admitted) do
  for kind, by_part in pairs(by_kind) do
    for part, ids in pairs(by_part) do index_move_all(P, q, kind, part, ids, 'available', 'running', now) end
  end
end
flush_counts(P)
return reply
