--[[
wf_commit_step.lua: commits an attempt of a workflow step that ran as a job of its own (a
step job), in one step. It is refused before any write unless the caller holds the step
job (running under the same lease id and fence: LeaseRejected) and the step still waits
for that job in the workflow's current, open run (StepNotPending: the run closed or
moved on, or a task gave the step up), so a stale or duplicate step job never appends.

Then the step job is acked (deleted, as a success with no retention) and the attempt's
events are delivered: into the inbox while the workflow's task runs (its commit appends
them), else appended to the history. An attempt that ends the step (step_completed, or
a last step_failed) clears the step's wait and enqueues the workflow's next task when
none is outstanding; a failed attempt with retries left enqueues the next attempt's step
job instead, due after its backoff, and the step waits for that one.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, leases, queues, scheduled,
         wf:<id>, wfh:<id>, wfruns:<id>, wfinbox:<id>, wftimers:<id>, wfsteps:<id>, wfids,
         wfstatus:<s>, wfq:*, q:<queue>:{counts,ring,drr,p:<part>,wake}, unique,
         quarantine, held:<fp>, retained, clock
ARGV[1]  workflow id
ARGV[2]  run id the step job was enqueued in
ARGV[3]  step key ("charge#1")
ARGV[4]  step job id, ARGV[5] lease id, ARGV[6] fence
ARGV[7]  the next attempt's step job: '' when the attempt ends the step, else a JSON
         [queue, partition, rate class, weight, payload, due ms]
ARGV[8]  number of events n; then n groups of 2: kind, body
Replies  {0, head, next task id or '', next attempt's step job id or ''}
         {-5}          LeaseRejected: not the step job's current holder
         {-22}         the workflow has no history
         {-24, why}    StepNotPending: why is 'closed:<status>', 'run:<current run id>'
                       or 'step:<the step job the step waits for, or ''>'
Cost     O(n * log N)
]]
--- @include rcall
--- @include OK
--- @include E_LEASE_REJECTED
--- @include E_WORKFLOW_NOT_FOUND
--- @include E_STEP_NOT_PENDING
--- @include now_ms
--- @include str
--- @include need
--- @include need_counts
--- @include structure_error
--- @include corrupt_reply
--- @include load_job_checked
--- @include K.job
--- @include K.leases
--- @include K.unique
--- @include K.wf_inbox
--- @include K.wf_steps
--- @include WF_CLOSED
--- @include wf_load
--- @include wf_route
--- @include wf_need_row
--- @include wf_need_task
--- @include wf_need_step
--- @include wf_event
--- @include wf_append_events
--- @include wf_enqueue_task
--- @include wf_enqueue_step
--- @include release_unique
--- @include delete_job
--- @include flush_counts
local P = KEYS[1]
local id, run, step = ARGV[1], ARGV[2], ARGV[3]
local sid, lease, fence = ARGV[4], ARGV[5], tonumber(ARGV[6])
local retry = nil
if ARGV[7] ~= '' then
  local r = cjson.decode(ARGV[7])
  retry = { step = step, queue = r[1], part = r[2], rc = r[3], weight = r[4], payload = r[5], at = tonumber(r[6]) }
end
local n = tonumber(ARGV[8])
local events = {}
for i = 1, n do
  local b = 8 + (i - 1) * 2
  events[i] = { kind = ARGV[b + 1], body = ARGV[b + 2] }
end
local now = now_ms(P)

-- 1. the fence, the step's wait, and every structure the writes touch.
local j, why = load_job_checked(P, sid, { 'state', 'lease', 'fence', 'queue', 'ukey', 'uwin', 'aux' })
if why then return corrupt_reply(K.job(P, sid), why) end
if not j or j.state ~= 'running' or j.lease ~= lease or j.fence ~= fence then return { E_LEASE_REJECTED } end
wf_need_row(P, id)
need(K.wf_steps(P, id), 'hash')
need(K.leases(P), 'zset')
need_counts(P, j.queue)
if j.ukey ~= '' then need(K.unique(P), 'hash') end
local bad = structure_error()
if bad then return bad end
local w = wf_load(P, id)
if w.head == 0 then return { E_WORKFLOW_NOT_FOUND } end
if WF_CLOSED[w.status] then return { E_STEP_NOT_PENDING, 'closed:' .. w.status } end
if w.run ~= run then return { E_STEP_NOT_PENDING, 'run:' .. w.run } end
local waits = str(rcall('HGET', K.wf_steps(P, id), step))
if waits ~= sid then return { E_STEP_NOT_PENDING, 'step:' .. waits } end
local r = wf_route(P, id)
if retry then
  wf_need_step(P, id, retry)
elseif r.task_state == '' then
  wf_need_task(P, r)
end
bad = structure_error()
if bad then return bad end

-- 2. writes
rcall('ZREM', K.leases(P), sid)
release_unique(P, sid, j)
delete_job(P, sid, j)
if r.task_state == 'running' then
  for _, e in ipairs(events) do rcall('RPUSH', K.wf_inbox(P, id), e.kind .. '\n' .. now .. '\n' .. e.body) end
else
  local add = {}
  for i, e in ipairs(events) do
    add[i] = wf_event(w, e.kind, e.body, now)
    add[i].seq = w.head + i
  end
  wf_append_events(P, id, w, add, now)
end
local next_task, next_step = '', ''
if retry then
  next_step = wf_enqueue_step(P, id, w, retry, now)
else
  rcall('HDEL', K.wf_steps(P, id), step)
  if r.task_state == '' then next_task = wf_enqueue_task(P, id, w, r, now) end
end
flush_counts(P)
return { OK, w.head, next_task, next_step }
