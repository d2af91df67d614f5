--[[
admit.lua: leases up to `capacity` available jobs to one worker.

Queues are served in the order given; paused queues are skipped. Inside a queue,
partitions take turns from a ring (deficit round robin): the partition at the head of the
ring gets `quantum` weight units of credit per turn, spends it on its jobs in rank order
(priority DESC, scheduled_at ASC, id ASC), then goes to the back of the ring carrying any
credit it could not spend. A turn cut short by capacity continues on the next call. Jobs
pinned to this worker have their own ring, visited in alternation with the shared one;
jobs pinned to other workers are in rings this script never reads.

A partition whose next job's rate class lacks tokens is passed over for this turn (its
credit is dropped), without looking further into it. A job whose fingerprint is
quarantined is set aside in held:<fp> until an operator releases the fingerprint.

Admission increments the job's fence, sets it running under the lease and charges its
rate class its weight. A call that stops at capacity pushes a wake-up token, so the next
idle worker comes for the rest.

KEYS[1]  namespace prefix; derived keys (lib.lua): paused, clock, quarantine, held:<fp>,
         rate:<class>, leases, job:<id>, q:<queue>:{counts,ring,drr,p:<part>,wake},
         q:<queue>:w:<worker>:{ring,drr,p:<part>}
ARGV[1]  worker id ("" = the worker takes no pinned work)
ARGV[2]  lease id
ARGV[3]  capacity (jobs)
ARGV[4]  lease duration ms
ARGV[5]  quantum (weight units per partition turn)
ARGV[6]  visit budget: the most jobs examined in this call
ARGV[7]  number of queues m; ARGV[8..7+m] queue names
Replies  {0, {id, hash, fence, lease expiry ms}, ...}: hash is the job's HGETALL list as
         it was before admission; state, lease, fence and expiry are what admission set
Cost     O(budget * log N): every examined job is a bounded number of commands, and at
         most `budget` jobs are examined.
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
--- @include K.held
--- @include K.paused
--- @include OK
--- @include now_ms
--- @include is_quarantined
--- @include RANK_WIDTH
--- @include num
--- @include str
--- @include move_count
--- @include flush_counts
--- @include ring_push_back
--- @include ring_remove
--- @include wake
--- @include JOB_DEFAULTS
--- @include load_bucket
--- @include save_bucket
local P = KEYS[1]
local worker, lease_id = ARGV[1], ARGV[2]
local capacity, lease_ms = tonumber(ARGV[3]), tonumber(ARGV[4])
local quantum, budget = tonumber(ARGV[5]), tonumber(ARGV[6])
local nq = tonumber(ARGV[7])
local now = now_ms(P)
local expires = now + lease_ms
-- Text, not Lua numbers, goes to redis.call where it can: a number is formatted on every call.
local expires_text = string.format('%d', expires)

local MAX_WEIGHT = 1048576 -- as MaxWeight in envelope.go
local reply = { OK }
local admitted = 0
local buckets = {}
local leases = {}
local last_queue = nil

-- Charges a rate class; false when it lacks the tokens. Buckets are read once per call.
local function rate_ok(class, weight)
  if class == '' then return true end
  local b = buckets[class]
  if b == nil then
    b = load_bucket(P, class, now) or false
    buckets[class] = b
  end
  if not b then return true end
  if b.tokens < weight then return false end
  b.tokens = b.tokens - weight
  return true
end

local function field(list, name)
  for i = 1, #list, 2 do
    if list[i] == name then return list[i + 1] end
  end
  return nil
end

-- One turn of `part`, the head of ring r: the partition spends its credit on its jobs
-- in rank order. Returns true when the turn admitted a job or banked credit toward a
-- heavy one, false when the partition was passed over.
local function turn(r, q, part)
  local pz = r.partition(part)
  local dfield = 'd:' .. part
  local stored = nil
  if r.credits then stored = rcall('HGET', r.state, dfield) end
  local credit = num(stored)
  local continuing = r.turn == part
  if not continuing then credit = credit + quantum end
  r.turn = nil
  -- The only partition with work for this worker shares turns with no one: it takes
  -- what it can.
  local alone = r.alone and not stored
  if alone then credit = capacity * MAX_WEIGHT end

  local got, outcome, emptied = 0, 'done', false
  while outcome == 'done' and credit >= 1 and admitted < capacity and budget > 0 do
    -- At most `credit` jobs fit (every weight is >= 1); one more tells whether the
    -- partition empties.
    local want = math.min(capacity - admitted, credit, budget)
    local members = rcall('ZRANGE', pz, 0, want)
    local taken = 0
    for i = 1, math.min(want, #members) do
      local m = members[i]
      local id = string.sub(m, RANK_WIDTH + 1)
      local jk = K.job(P, id)
      local h = rcall('HGETALL', jk)
      budget = budget - 1
      local fp, class = str(field(h, 'fp')), str(field(h, 'rc'))
      local weight = tonumber(field(h, 'weight')) or JOB_DEFAULTS.weight
      if is_quarantined(P, fp) then
        taken = taken + 1
        rcall('SADD', K.held(P, fp), id)
        rcall('HSET', jk, 'held', '1')
      elseif weight > credit then
        outcome = 'carry'
        break
      elseif not rate_ok(class, weight) then
        outcome = 'passed'
        break
      else
        taken = taken + 1
        credit = credit - weight
        local fence = num(field(h, 'fence')) + 1
        if class ~= '' and buckets[class] then
          rcall('HSET', jk, 'state', 'running', 'lease', lease_id, 'fence', string.format('%d', fence), 'charge', weight)
        else
          rcall('HSET', jk, 'state', 'running', 'lease', lease_id, 'fence', string.format('%d', fence))
        end
        leases[#leases + 1] = expires_text
        leases[#leases + 1] = id
        move_count(P, q, 'available', 'running')
        reply[#reply + 1] = { id, h, fence, expires }
        admitted = admitted + 1
        got = got + 1
      end
    end
    -- What was taken is the head of the partition, in order: remove it by rank.
    if taken > 0 then rcall('ZREMRANGEBYRANK', pz, 0, taken - 1) end
    if taken == #members then emptied = true end
    if emptied then break end
  end

  if alone then
    if emptied then
      ring_remove(r.ring, part)
      r.size = 0
    end
    return got > 0
  elseif emptied then
    -- An emptied partition leaves the ring and forgets its credit.
    ring_remove(r.ring, part)
    r.size = r.size - 1
    credit = 0
  elseif outcome == 'done' and credit >= 1 then
    -- Capacity or budget ran out mid-turn: the partition keeps the head and its credit.
    rcall('HSET', r.state, 'turn', part, dfield, credit)
    r.credits = true
    return true
  else
    ring_push_back(r.ring, part)
    if outcome == 'passed' then credit = 0 end
  end
  if credit > 0 then
    rcall('HSET', r.state, dfield, credit)
    r.credits = true
  elseif stored then
    rcall('HDEL', r.state, dfield)
  end
  if continuing then rcall('HDEL', r.state, 'turn') end
  return got > 0 or outcome == 'carry'
end

-- Serves the rings of one queue, alternating between them, until capacity or budget
-- runs out or every partition of every ring was passed over since its last admission.
local function serve(q, rings)
  local live, total = 0, 0
  for _, r in ipairs(rings) do
    r.size = rcall('ZCARD', r.ring)
    total = total + r.size
    if r.size > 0 then
      local st = rcall('HLEN', r.state)
      r.credits = st > 0
      if r.credits then r.turn = rcall('HGET', r.state, 'turn') end
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
        r.heads = rcall('ZRANGE', r.ring, 0, math.min(r.size, capacity - admitted + 8) - 1)
        r.pos = 1
      end
      local part = r.heads[r.pos]
      r.pos = r.pos + 1
      if not part then
        r.passed, r.size = 0, 0
      elseif turn(r, q, part) then
        r.passed = 0
      else
        r.passed = r.passed + 1
      end
      if r.passed >= r.size then live = live - 1 end
    end
  end
  if both then
    local nxt = 'pinned'
    if idx == 1 then nxt = 'shared' end
    rcall('HSET', rings[1].state, 'next', nxt)
  end
end

for i = 1, nq do
  if admitted >= capacity or budget <= 0 then break end
  local q = ARGV[7 + i]
  if rcall('SISMEMBER', K.paused(P), q) == 0 then
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
    serve(q, rings)
    last_queue = q
  end
end

-- Stopped by capacity with work left: pass the wake-up on, so another idle worker
-- comes for the rest.
if admitted >= capacity and last_queue then wake(P, last_queue) end
if #leases > 0 then rcall('ZADD', K.leases(P), unpack(leases)) end
for _, b in pairs(buckets) do
  if b then save_bucket(b) end
end
flush_counts(P)
return reply
