--[[
heartbeat.lua: records one worker's heartbeat and forgets workers long unseen.

The record (JSON, written by Go) replaces the worker's previous one in `workers`; the
worker's last-seen time is the store clock's now, in `workers:seen`; and each queue it
serves lists it in q:<queue>:workers, scored by the time until which this beat keeps it
live (now + liveness window). A stopping worker sends a last beat with a window of 0:
from then on it is listed, not live. Readers (why.lua, Store.Workers, QueueStats) call a
worker live while that time is ahead of the store clock, so no reader needs to know the
window a worker chose.

Workers last seen more than the retention ago are removed, at most ARGV[5] per call,
with their entries in the queues their record names: heartbeats of the live fleet keep
the listing short without a sweep of its own. The beating worker's own queues shed
entries whose liveness ended more than the retention ago (a worker that restarted under
the same id with other queues leaves such entries behind).

Corrupt data: every key the call writes is checked before the first write (workers is
a hash, workers:seen and each queue's workers are ZSETs); a bad one refuses the call
with E_CORRUPT, nothing written. A pruned worker whose record does not decode loses its
record and last-seen entry; its queue entries are not live and are shed as above.

KEYS[1]  namespace prefix; derived keys (lib.lua): workers, workers:seen,
         q:<queue>:workers, clock
ARGV[1]  worker id
ARGV[2]  heartbeat record (JSON)
ARGV[3]  liveness window ms (0 = the worker stopped)
ARGV[4]  retention ms: how long an unseen worker stays listed
ARGV[5]  prune limit: the most unseen workers this call removes
ARGV[6]  number of queues m; ARGV[7..6+m] queue names
Replies  {0, now ms, pruned workers} | {-9, key, why} a structure is corrupt, nothing written
Cost     O((m + prune limit * queues per pruned worker) * log N)
]]
--- @include rcall
--- @include K.workers
--- @include K.workers_seen
--- @include K.queue_workers
--- @include OK
--- @include now_ms
--- @include first_bad_key
--- @include corrupt_reply
--- @include worker_record
local P = KEYS[1]
local id, record = ARGV[1], ARGV[2]
local live_ms, retention = tonumber(ARGV[3]), tonumber(ARGV[4])
local prune_limit, nq = tonumber(ARGV[5]), tonumber(ARGV[6])
local now = now_ms(P)
local cutoff = now - retention

-- The read phase: what to prune, and every key the writes reach.
local check = { { K.workers(P), 'hash' }, { K.workers_seen(P), 'zset' } }
for i = 1, nq do check[#check + 1] = { K.queue_workers(P, ARGV[6 + i]), 'zset' } end
local bad, why = first_bad_key(check)
if bad then return corrupt_reply(bad, why) end
local gone = {}
for _, w in ipairs(rcall('ZRANGEBYSCORE', K.workers_seen(P), '-inf', '(' .. cutoff, 'LIMIT', 0, prune_limit)) do
  if w ~= id then
    local r = worker_record(P, w)
    local queues = {}
    if r and type(r.queues) == 'table' then
      for _, q in ipairs(r.queues) do
        if type(q) == 'string' then queues[#queues + 1] = q end
      end
    end
    gone[#gone + 1] = { id = w, queues = queues }
  end
end
for _, g in ipairs(gone) do
  local keys = {}
  for _, q in ipairs(g.queues) do keys[#keys + 1] = { K.queue_workers(P, q), 'zset' } end
  bad, why = first_bad_key(keys)
  if bad then return corrupt_reply(bad, why) end
end

-- The writes.
for _, g in ipairs(gone) do
  rcall('HDEL', K.workers(P), g.id)
  rcall('ZREM', K.workers_seen(P), g.id)
  for _, q in ipairs(g.queues) do rcall('ZREM', K.queue_workers(P, q), g.id) end
end
rcall('HSET', K.workers(P), id, record)
rcall('ZADD', K.workers_seen(P), now, id)
local until_text = string.format('%d', now + live_ms)
for i = 1, nq do
  local qk = K.queue_workers(P, ARGV[6 + i])
  rcall('ZREMRANGEBYSCORE', qk, '-inf', '(' .. cutoff)
  rcall('ZADD', qk, until_text, id)
end
return { OK, now, #gone }
