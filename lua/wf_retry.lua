--[[
wf_retry.lua: retries a failed workflow run from its last good point: the history's
events from the cut on (the caller names it: the first attempt of the first step that
failed for good, or the workflow_failed event) are removed, except the ones the caller
names to keep (what came from outside and the code still waits for: signals, children's
ends, timers armed before the cut), which move, in order, to right after the kept
history; the run is open again (running, its run chain
entry and listings with it) and a task is enqueued, which replays the kept history and
runs the code on from the cut. Checked against the head the caller read.

KEYS[1]  namespace prefix; derived keys (lib.lua): wf:<id>, wfh:<id>, wfruns:<id>,
         wfinbox:<id>, wftimers:<id>, wfstatus:<s>, wfq:*, vis:<id>, visq:*, job:<task id>,
         queues, q:<queue>:{counts,ring,drr,p:<part>,wake}, quarantine, held:<fp>, verruns,
         clock
ARGV[1]  workflow id
ARGV[2]  expected head
ARGV[3]  cut: the seq of the first event removed (past the run's workflow_started)
ARGV[4..] the seqs past the cut to keep, ascending
Replies  {0, head, task id}
         {-22}                      the workflow has no history
         {-23, status}              the run did not fail
         {-20, expected, found}     SequenceConflict
Cost     O(removed events (at most 1000) + log N)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include E_WORKFLOW_NOT_FOUND
--- @include E_WORKFLOW_CLOSED
--- @include E_SEQUENCE_CONFLICT
--- @include SEP
--- @include K.wf
--- @include K.wf_history
--- @include K.wf_runs
--- @include K.wf_status
--- @include K.wf_query
--- @include wf_load
--- @include wf_route
--- @include wf_need_row
--- @include wf_need_task
--- @include structure_error
--- @include listing_move
--- @include wf_enqueue_task
--- @include wf_record_visibility
--- @include wf_count_open
--- @include flush_counts
local P = KEYS[1]
local id = ARGV[1]
local expected = tonumber(ARGV[2])
local cut = tonumber(ARGV[3])
local now = now_ms(P)
wf_need_row(P, id)
local bad = structure_error()
if bad then return bad end
local w = wf_load(P, id)
if w.head == 0 then return { E_WORKFLOW_NOT_FOUND } end
if w.status ~= 'failed' then return { E_WORKFLOW_CLOSED, w.status } end
if w.head ~= expected then return { E_SEQUENCE_CONFLICT, expected, w.head } end
local r = wf_route(P, id)
if cut <= r.runseq or cut > w.head or w.head - cut >= 1000 then
  return redis.error_reply('headgate: wf_retry: cut ' .. cut .. ' is outside the failed run')
end
local kept, after = {}, cut
for i = 4, #ARGV do
  local seq = tonumber(ARGV[i])
  if not seq or seq <= after or seq > w.head then
    return redis.error_reply('headgate: wf_retry: kept seq ' .. ARGV[i] .. ' is not past the cut in ascending order')
  end
  after = seq
  kept[#kept + 1] = rcall('HGET', K.wf_history(P, id), seq)
  if not kept[#kept] then
    return redis.error_reply('headgate: wf_retry: kept seq ' .. seq .. ' is not in the history')
  end
end
wf_need_task(P, r)
bad = structure_error()
if bad then return bad end
local removed = {}
for seq = cut, w.head do removed[#removed + 1] = seq end
rcall('HDEL', K.wf_history(P, id), unpack(removed))
if #kept > 0 then
  local moved = {}
  for i, stored in ipairs(kept) do
    moved[#moved + 1] = cut - 1 + i
    moved[#moved + 1] = stored
  end
  rcall('HSET', K.wf_history(P, id), unpack(moved))
end
local old = { started = w.started, type = w.type, status = w.status, parent = w.parent }
w.head, w.status, w.closed = cut - 1 + #kept, 'running', ''
wf_count_open(P, w)
rcall('HSET', K.wf(P, id), 'head', w.head, 'status', w.status, 'closed', '', 'vopen', w.vopen, 'updated', now)
-- A cancel or pause request the run had is not pending in the reopened run.
rcall('HDEL', K.wf(P, id), 'cancelreq', 'pausereq')
rcall('ZREM', K.wf_status(P, 'failed'), id)
rcall('ZADD', K.wf_status(P, 'running'), '0', id)
listing_move(P, K.wf_query, id, old, { started = w.started, type = w.type, status = w.status, parent = w.parent })
local last = rcall('LINDEX', K.wf_runs(P, id), -1)
if last then
  local run_id, _, started = string.match(last, '^(.-)\31(.-)\31(.-)\31')
  rcall('LSET', K.wf_runs(P, id), -1, run_id .. SEP .. 'running' .. SEP .. started .. SEP)
end
wf_record_visibility(P, id, { run = w.run, type = w.type, status = w.status, started = w.started, closed = '',
  parent = w.parent, pkg = w.pkg, memo = '' }, now)
local tid = wf_enqueue_task(P, id, w, r, now)
flush_counts(P)
return { OK, w.head, tid }
