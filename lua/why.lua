--[[
why.lua: explains, from the store's own state, why a job is not running now.

Read-only: it writes nothing, so it may run at any time, as often as an operator likes.
Flags: no-writes
It returns every reason that applies, most decisive first:
- corrupt: the job's data is unusable and it was parked (or would be) in `corrupt`;
- running: admitted by worker "by" at its entry time in the running jobs' index, under
  lease and fence, with the lease's end
  (leases ZSET); then lease_expired when that end has passed (the reclaimer will hand it
  back), and worker_gone when the holder's heartbeat is not live;
- finished: a terminal state, when ("fin"), and the outcome (the last entry of its error
  history; success for a completed job); a quarantined job's fingerprint;
- otherwise, in this order: staged (pending), scheduled or retrying at its time; its
  queue paused; its fingerprint quarantined (with the job that crashed into it); its
  rate class short of its weight (tokens now, the time the bucket holds the weight, 0
  when it never does: a class at limit 0 refills nothing) or
  the job heavier than the burst; pinned to a worker that is not live (with when it was
  last seen); no live worker serving its queue, or none of them handling its kind, or
  every one that does busy (its jobs in flight at its concurrency at its last beat:
  workers_busy, with their sums "running" and "cap"); its fingerprint at the in-flight
  cap; its partition's turn (an available job indexed in
  its partition); its queue at its enqueue limit.

The partition's turn counts the jobs admission takes before this one at `quantum`
weight units of credit per turn, counting every job as weight 1: the jobs ranked ahead
of it in its partition, and from every other partition of the ring as many jobs as the
turns it gets first (one more round for the partitions ahead of this one in turn order).
It reads at most ARGV[3] partitions of the ring ("exact" 0 when the ring has more); the
pinned ring's alternation with the shared one and the queues a worker serves first are
not counted. Worker liveness comes from the heartbeats (heartbeat.lua): a worker is live
while the time its last beat set in q:<queue>:workers is ahead of the store clock; the
kinds of at most ARGV[4] live workers of the queue are read, and no_worker_for_kind is
said only when all of them were.

Corrupt data: the keys read are checked first (type, or absent); one of the wrong type
refuses the call with E_CORRUPT. A job whose own hash is unusable is the reason
"corrupt", as is one parked in `corrupt`. A pinned job whose worker is live but does not
serve its queue or kind gets no_live_worker or no_worker_for_kind naming the worker.

Workflows: only jobs are explained here, and an unknown id is E_NOT_FOUND. A workflow
id is explained by Store.WhyWorkflow (wf_why.go), which calls this script for the
run's outstanding task job.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, errors:<id>, corrupt,
         leases, paused, quarantine, rate:<class>, policy, fprunning, limits,
         q:<queue>:{counts,ring,p:<part>,workers,ix:running:<kind>}, q:<queue>:w:<worker>:{ring,p:<part>},
         workers, workers:seen, clock
ARGV[1]  job id
ARGV[2]  quantum (weight units per partition turn)
ARGV[3]  ring cap: the most partitions read for the turn count
ARGV[4]  worker cap: the most live workers whose kinds are read
Replies  {0, state, now ms, {reason, field, value, ...}, ...} ("" state: parked as corrupt
         with no job hash) | {-7} no such job | {-9, key, why} a key read is corrupt
Cost     O((ring cap + worker cap) * log N)
]]
--- @include rcall
--- @include ms_text
--- @include K.errors
--- @include K.corrupt
--- @include K.leases
--- @include K.job_index
--- @include K.paused
--- @include K.quarantine
--- @include K.policy
--- @include K.fp_running
--- @include K.limits
--- @include K.queue_workers
--- @include K.workers_seen
--- @include OK
--- @include E_NOT_FOUND
--- @include now_ms
--- @include num
--- @include rank
--- @include legacy_rank
--- @include unfinished
--- @include partition_of
--- @include load_bucket
--- @include load_job_checked
--- @include worker_record
--- @include K.counts
--- @include K.rate
--- @include K.workers
--- @include first_bad_key
--- @include corrupt_reply
local P = KEYS[1]
local id = ARGV[1]
local quantum, ring_cap, worker_cap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms(P)
local reasons = {}
local function add(name, ...) reasons[#reasons + 1] = { name, ... } end

local FIELDS = { 'state', 'queue', 'part', 'sticky', 'prio', 'sched', 'fp', 'held', 'attempt', 'maxa', 'rc',
  'lease', 'fence', 'parked', 'weight', 'kind', 'by', 'fin' }
local bad, bad_why = first_bad_key({ { K.corrupt(P), 'hash' } })
if bad then return corrupt_reply(bad, bad_why) end
local parked_why = rcall('HGET', K.corrupt(P), id)
local j, why = load_job_checked(P, id, FIELDS)
if parked_why or why then
  add('corrupt', 'why', parked_why or why)
  return { OK, (j and j.state) or '', now, unpack(reasons) }
end
if not j then return { E_NOT_FOUND } end
local q = j.queue

-- Every key read below is of its type (or absent), else the call is refused as corrupt;
-- the other partitions of the ring are read through pcall and counted 0 when unusable.
local pz, ring = partition_of(P, q, j.sticky, j.part)
local checked = { { K.leases(P), 'zset' }, { K.paused(P), 'set' }, { K.quarantine(P), 'hash' },
  { K.policy(P), 'hash' }, { K.fp_running(P), 'hash' }, { K.limits(P), 'hash' }, { K.counts(P, q), 'hash' },
  { K.workers(P), 'hash' }, { K.workers_seen(P), 'zset' }, { K.queue_workers(P, q), 'zset' },
  { K.errors(P, id), 'list' }, { pz, 'zset' }, { ring, 'zset' } }
if j.rc ~= '' then checked[#checked + 1] = { K.rate(P, j.rc), 'hash' } end
bad, bad_why = first_bad_key(checked)
if bad then return corrupt_reply(bad, bad_why) end

-- Whether a worker's last beat found it running as many jobs as it runs at once.
local function busy(r)
  local cap = num(r.concurrency)
  return cap > 0 and num(r.in_flight) >= cap
end

-- Whether worker w is live now, and when it was last seen (0: never, or long ago).
local function worker_live(w)
  local seen = tonumber(rcall('ZSCORE', K.workers_seen(P), w)) or 0
  local r = worker_record(P, w)
  local live = r ~= nil and seen + (tonumber(r.liveness) or 0) > now
  return live, seen
end

local FINISHED = { completed = true, archived = true, cancelled = true, undecodable = true, quarantined = true }

-- Whether the list l (from a heartbeat record) holds v.
local function has(l, v)
  if type(l) ~= 'table' then return false end
  for _, x in ipairs(l) do
    if x == v then return true end
  end
  return false
end

if j.state == 'running' then
  local until_ms = tonumber(rcall('ZSCORE', K.leases(P), id)) or 0
  -- Admitted when it entered the running jobs' index: admission writes no time of its own.
  local since = tonumber(redis.pcall('ZSCORE', K.job_index(P, j.queue, 'running', j.kind), id)) or 0
  add('running', 'worker', j.by, 'lease', j.lease, 'since', since, 'fence', j.fence, 'lease_until', until_ms)
  if until_ms <= now then add('lease_expired', 'at', until_ms) end
  if j.by ~= '' then
    local live, seen = worker_live(j.by)
    if not live then add('worker_gone', 'worker', j.by, 'seen', seen) end
  end
elseif FINISHED[j.state] then
  local outcome, msg = '', ''
  if j.state == 'completed' then
    outcome = 'success'
  else
    local last = rcall('LINDEX', K.errors(P, id), -1)
    local ok, e = false, nil
    if last then ok, e = pcall(cjson.decode, last) end
    if ok and type(e) == 'table' then
      if type(e.outcome) == 'string' then outcome = e.outcome end
      if type(e.msg) == 'string' then msg = e.msg end
    end
  end
  local fin = { 'state', j.state, 'at', num(j.fin), 'outcome', outcome, 'message', msg }
  -- a quarantined job's fingerprint is what an operator releases to retry it
  if j.state == 'quarantined' and j.fp ~= '' then fin[9], fin[10] = 'fingerprint', j.fp end
  add('finished', unpack(fin))
else
  if j.state == 'pending' then
    add('staged')
  elseif j.state == 'scheduled' then
    add('scheduled', 'at', j.sched)
  elseif j.state == 'retryable' then
    add('retrying', 'at', j.sched, 'attempt', j.attempt, 'max_attempts', j.maxa)
  end
  if rcall('SISMEMBER', K.paused(P), q) == 1 then add('paused', 'queue', q) end
  if j.fp ~= '' then
    local crashed = rcall('HGET', K.quarantine(P), j.fp)
    if crashed then add('quarantined_fingerprint', 'fingerprint', j.fp, 'crashed_job', crashed) end
  end
  local available = j.state == 'available' and j.held ~= '1'
  -- A weight over the class's burst never runs at this limit: said before admission
  -- meets the job and parks it, as it is after (a queue no worker serves yet, say).
  -- Tokens short for now are said once admission parked the job: they refill meanwhile.
  local b = nil
  if available and j.rc ~= '' then b = load_bucket(P, j.rc, now) end
  if available and (j.parked ~= '' or (b and j.weight > b.burst)) then
    if j.parked == 'u' or (b and j.weight > b.burst) then
      add('too_heavy', 'class', j.rc, 'weight', j.weight, 'burst', (b and b.burst) or 0)
    elseif b then
      -- 0: a class at limit 0 refills nothing, so the tokens never come.
      local at = now
      if b.tokens < j.weight then
        at = 0
        if b.limit > 0 and b.window > 0 then
          at = b.refilled + math.ceil((j.weight - b.tokens) * b.window / b.limit)
        end
      end
      add('rate_limited', 'class', j.rc, 'tokens', math.floor(b.tokens), 'weight', j.weight, 'burst', b.burst,
        'refill_at', at)
    end
  end
  if j.sticky ~= '' then
    local live, seen = worker_live(j.sticky)
    local r = worker_record(P, j.sticky)
    if not live then
      add('pinned_worker_gone', 'worker', j.sticky, 'seen', seen)
    elseif not has(r.queues, q) then
      add('no_live_worker', 'queue', q, 'worker', j.sticky)
    elseif not has(r.kinds, j.kind) then
      add('no_worker_for_kind', 'queue', q, 'kind', j.kind, 'worker', j.sticky)
    elseif busy(r) then
      add('workers_busy', 'queue', q, 'worker', j.sticky, 'running', num(r.in_flight), 'cap', num(r.concurrency))
    end
  else
    local live = rcall('ZRANGEBYSCORE', K.queue_workers(P, q), '(' .. ms_text(now), '+inf', 'LIMIT', 0, worker_cap)
    if #live == 0 then
      add('no_live_worker', 'queue', q)
    elseif #live < worker_cap then
      local served, all_busy, running, cap = false, true, 0, 0
      for _, w in ipairs(live) do
        local r = worker_record(P, w)
        if r and has(r.kinds, j.kind) then
          served = true
          if busy(r) then
            running, cap = running + num(r.in_flight), cap + num(r.concurrency)
          else
            all_busy = false
          end
        end
      end
      if not served then
        add('no_worker_for_kind', 'queue', q, 'kind', j.kind)
      elseif all_busy then
        add('workers_busy', 'queue', q, 'running', running, 'cap', cap)
      end
    end
  end
  if available and j.fp ~= '' then
    local cap = num(rcall('HGET', K.policy(P), 'fp_inflight'))
    local running = num(rcall('HGET', K.fp_running(P), j.fp))
    if cap > 0 and running >= cap then add('fingerprint_cap', 'fingerprint', j.fp, 'running', running, 'cap', cap) end
  end
  if available and j.parked == '' then
    local pos = rcall('ZRANK', pz, rank(j.prio, j.sched, id)) or rcall('ZRANK', pz, legacy_rank(j.prio, j.sched, id))
    if pos then
      local rounds = math.floor(pos / quantum)
      local size = rcall('ZCARD', ring)
      local ahead, partitions_ahead, before = pos, 0, true
      local exact = 0
      if size <= ring_cap then exact = 1 end
      for _, part in ipairs(rcall('ZRANGE', ring, 0, ring_cap - 1)) do
        if part == j.part then
          before = false
        else
          local turns = rounds
          if before then
            turns = turns + 1
            partitions_ahead = partitions_ahead + 1
          end
          local n = redis.pcall('ZCARD', (partition_of(P, q, j.sticky, part)))
          if type(n) ~= 'number' then
            n, exact = 0, 0
          end
          ahead = ahead + math.min(n, turns * quantum)
        end
      end
      add('partition_turn', 'ahead', ahead, 'in_partition', pos, 'partitions_ahead', partitions_ahead,
        'partitions', size, 'rounds', rounds, 'quantum', quantum, 'exact', exact)
    end
  end
  local limit = tonumber(rcall('HGET', K.limits(P), q))
  if limit then
    local n = unfinished(P, q)
    if n >= limit then add('queue_full', 'queue', q, 'unfinished', n, 'limit', limit) end
  end
end
return { OK, j.state, now, unpack(reasons) }
