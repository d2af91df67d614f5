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
rate class its weight.

KEYS[1]  namespace prefix; derived keys (lib.lua): paused, clock, quarantine, held:<fp>,
         rate:<class>, leases, job:<id>, q:<queue>:{counts,ring,drr,p:<part>},
         q:<queue>:w:<worker>:{ring,drr,p:<part>}
ARGV[1]  worker id ("" = the worker takes no pinned work)
ARGV[2]  lease id
ARGV[3]  capacity (jobs)
ARGV[4]  lease duration ms
ARGV[5]  quantum (weight units per partition turn)
ARGV[6]  visit budget: the most jobs examined in this call
ARGV[7]  number of queues m; ARGV[8..7+m] queue names
Replies  {0, {id_1, hash_1}, ..., {id_k, hash_k}}, each hash an HGETALL list after admission
Cost     O(budget * log N): every examined job is a bounded number of commands, and at
         most `budget` jobs are examined.
]]
local P = KEYS[1]
local worker, lease_id = ARGV[1], ARGV[2]
local capacity, lease_ms = tonumber(ARGV[3]), tonumber(ARGV[4])
local quantum, budget = tonumber(ARGV[5]), tonumber(ARGV[6])
local nq = tonumber(ARGV[7])
local now = now_ms(P)
local expires = now + lease_ms

local reply = { OK }
local admitted = 0
local buckets = {}

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

local function admit(id, q, charge)
  local jk = K.job(P, id)
  local fence = rcall('HINCRBY', jk, 'fence', 1)
  rcall('HSET', jk, 'state', 'running', 'lease', lease_id, 'exp', expires, 'charge', charge)
  rcall('ZADD', K.leases(P), expires, id)
  move_count(P, q, 'available', 'running')
  reply[#reply + 1] = { id, rcall('HGETALL', jk) }
  admitted = admitted + 1
end

-- One turn of the partition at the head of `r`. Returns 'empty' when the ring has no
-- partition, 'passed' when the partition could not admit for lack of tokens or work,
-- 'progress' otherwise (it admitted, or it banked credit toward a heavy job).
local function visit(r, q)
  local part = rcall('ZRANGE', r.ring, 0, 0)[1]
  if not part then return 'empty' end
  local pz = r.partition(part)
  local dfield = 'd:' .. part
  local st = rcall('HMGET', r.state, 'turn', dfield)
  local credit = num(st[2])
  if st[1] ~= part then
    credit = credit + quantum
    rcall('HSET', r.state, 'turn', part)
  end
  local got = 0
  local function end_turn(keep_credit)
    rcall('ZREM', r.ring, part)
    if rcall('ZCARD', pz) == 0 then
      rcall('HDEL', r.state, dfield, 'turn')
      return
    end
    ring_push_back(r.ring, part)
    if keep_credit and credit > 0 then
      rcall('HSET', r.state, dfield, credit)
    else
      rcall('HDEL', r.state, dfield)
    end
    rcall('HDEL', r.state, 'turn')
  end
  while true do
    if admitted >= capacity or budget <= 0 then
      -- The turn continues on the next call.
      rcall('HSET', r.state, dfield, credit)
      if got > 0 then return 'progress' end
      return 'passed'
    end
    local m = rcall('ZRANGE', pz, 0, 0)[1]
    if not m then
      end_turn(false)
      if got > 0 then return 'progress' end
      return 'passed'
    end
    budget = budget - 1
    local id = string.sub(m, RANK_WIDTH + 1)
    local v = rcall('HMGET', K.job(P, id), 'fp', 'rc', 'weight')
    local fp, class, weight = str(v[1]), str(v[2]), num(v[3])
    if fp ~= '' and rcall('HEXISTS', K.quarantine(P), fp) == 1 then
      rcall('ZREM', pz, m)
      rcall('SADD', K.held(P, fp), id)
      rcall('HSET', K.job(P, id), 'held', '1')
    elseif weight > credit then
      -- Credit carries over: a job heavier than the quantum runs after enough turns.
      end_turn(true)
      return 'progress'
    elseif not rate_ok(class, weight) then
      end_turn(false)
      if got > 0 then return 'progress' end
      return 'passed'
    else
      rcall('ZREM', pz, m)
      credit = credit - weight
      local charge = 0
      if class ~= '' and buckets[class] then charge = weight end
      admit(id, q, charge)
      got = got + 1
    end
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
    -- A ring stays live until it is empty or every partition in it was passed over
    -- since its last admission.
    local live = 0
    for _, r in ipairs(rings) do
      r.size = rcall('ZCARD', r.ring)
      r.passed = 0
      r.live = r.size > 0
      if r.live then live = live + 1 end
    end
    local idx = 1
    while live > 0 and admitted < capacity and budget > 0 do
      local r = rings[idx]
      if r.live then
        local res = visit(r, q)
        if res == 'progress' then
          r.passed = 0
        else
          r.passed = r.passed + 1
        end
        if res == 'empty' or r.passed >= r.size then
          r.live = false
          live = live - 1
        end
      end
      idx = idx % #rings + 1
    end
  end
end

for _, b in pairs(buckets) do
  if b then save_bucket(b) end
end
return reply
