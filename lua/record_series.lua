--[[
record_series.lua: snapshots every queue's outcome counters (completed, failed: lib.lua
count_outcome) into the queue's throughput series, so a dashboard draws the last hour's
throughput and failure rate from one read per queue. A maintenance duty calls it about
once a minute; the per-job cost stays the ack's one counter increment per batch.

A queue whose newest sample is less than the gap old is left alone, so two callers (a
duty changing hands) never record twice in a gap. Each series keeps its newest samples.
An unusable structure (queues or counters of another type, a series that is not a
zset) refuses the call with CorruptError before any write.

KEYS[1]  namespace prefix; derived keys (lib.lua): counters, q:<queue>:series, clock
ARGV[1]  gap ms: the least time between two samples of a queue (> 0)
ARGV[2]  the most samples a series keeps (> 0)
ARGV[3]  number of queues n; then n groups of 1: queue name (the caller reads the names
         from queues)
Replies  {0, number of queues sampled}
Cost     O(n * log samples)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include K.counters
--- @include K.series
--- @include need
--- @include structure_error
local P = KEYS[1]
local gap, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms(P)

-- 1. reads, and the check of every structure the writes touch
local queues = {}
for i = 1, tonumber(ARGV[3]) do queues[i] = ARGV[3 + i] end
need(K.counters(P), 'hash')
for _, q in ipairs(queues) do need(K.series(P, q), 'zset') end
local bad = structure_error()
if bad then return bad end
local due, fields = {}, {}
for _, q in ipairs(queues) do
  local last = rcall('ZRANGE', K.series(P, q), -1, -1, 'WITHSCORES')
  if not last[2] or now - tonumber(last[2]) >= gap then
    due[#due + 1] = q
    fields[#fields + 1] = 'completed:' .. q
    fields[#fields + 1] = 'failed:' .. q
  end
end
if #due == 0 then return { OK, 0 } end
local counts = rcall('HMGET', K.counters(P), unpack(fields))

-- 2. writes
for i, q in ipairs(due) do
  local completed = math.floor(tonumber(counts[2 * i - 1]) or 0)
  local failed = math.floor(tonumber(counts[2 * i]) or 0)
  local key = K.series(P, q)
  rcall('ZADD', key, now, string.format('%d:%d:%d', now, completed, failed))
  rcall('ZREMRANGEBYRANK', key, 0, -keep - 1)
end
return { OK, #due }
