--[[
wf_commit_task.lua: commits a workflow task, or checkpoints it, in one step. It is
refused before any write unless the caller holds the task (the job is running under the
same lease id and fence, and it is the workflow's outstanding task: LeaseRejected) and
the history's head is the sequence the task read (SequenceConflict), so a stale worker
can never append.

Then: the task's events are appended (a checkpoint stops here, with the timers, children
and step jobs below; the task keeps running); timers are armed and retired; children are
opened with their first tasks (a run that closes or continues as new names its armed
timers to retire); steps that run as jobs of their own get their step jobs, and steps
given up (a cancel) lose theirs, a running holder told on the cancel channel; the step
jobs the steps still wait for are dropped when the run closes or moves on (a running
one's commit is refused), staged when the commit pauses the run and released when it
resumes it (as wf_terminate, wf_pause and wf_resume do); a run that closed publishes on
its closed channel, updates its visibility row and tells its parent.
An ending commit also appends the events that waited in the inbox while the task ran
(but a step job's events of a step the commit gives up), acks the task (deleted, as a
success with no retention) and enqueues the next task when the inbox held events or the
caller asks for one (a new run after continue-as-new). A new run's workflow_started names
its package version, and the run's tasks move to that version's task queue
(wf_task_queue); children are opened on the version their start names.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, leases, queues, wf:<id>,
         wfh:<id>, wfruns:<id>, wfinbox:<id>, wftimers:<id>, wfsteps:<id>, wfids,
         wfstatus:<s>, wfq:*, timers, vis:<id>, visq:*, scheduled,
         q:<queue>:{counts,ring,drr,p:<part>,wake}, unique, quarantine, held:<fp>, retained,
         verruns, clock; the same for children, step jobs and the parent; channels
         wfclosed:<id>, cancelled
ARGV[1]  workflow id
ARGV[2]  task job id, ARGV[3] lease id, ARGV[4] fence
ARGV[5]  expected head
ARGV[6]  1 = end the task, 0 = checkpoint
ARGV[7]  1 = enqueue a next task
ARGV[8]  parent event kind ('' = none: child_completed | child_failed), ARGV[9] its body
ARGV[10] timers to arm: a JSON array of [timer id, fire ms (a string), armed seq]
ARGV[11] timers to retire, whatever their arming: a JSON array of timer ids
ARGV[12] children: a JSON array of [child id, workflow_started body, type, run id,
         package version, queue (the child's own: its tasks go on its task queue),
         partition]
ARGV[13] step jobs to enqueue: a JSON array of [step key, queue (the step's own: the job goes on
         the run version's queue of it, as tasks do), partition, rate class,
         weight, payload]
ARGV[14] steps given up: a JSON array of step keys whose step jobs are dropped
ARGV[15] number of events n (as in wf_append.lua); then n groups of 9:
         seq, kind, recorded ms (0 = the store clock), body, workflow type, run id,
         parent workflow id, parent run id, package version
Replies  {0, head, next task id or '', the step jobs' ids in ARGV[13]'s order...}
         {-5}                       LeaseRejected: not the task's current holder
         {-20, expected, found}     SequenceConflict
         {-26, version, queue}      a step job's queue, or the new run's task queue, on the
                                    run's version would be longer than a queue name
Cost     O((n + inbox (at most 1000) + timers + children + steps) * log N), and the steps
         waiting when the commit moves the run's status
]]
--- @include rcall
--- @include OK
--- @include E_LEASE_REJECTED
--- @include E_SEQUENCE_CONFLICT
--- @include now_ms
--- @include need
--- @include need_counts
--- @include structure_error
--- @include corrupt_reply
--- @include load_job_checked
--- @include K.job
--- @include K.leases
--- @include K.wf
--- @include K.wf_inbox
--- @include K.wf_timers
--- @include K.wf_closed
--- @include K.wf_steps
--- @include K.timers
--- @include K.unique
--- @include SEP
--- @include WF_CLOSED
--- @include wf_load
--- @include wf_route
--- @include wf_need_row
--- @include wf_need_task
--- @include wf_append_events
--- @include wf_arm_timer
--- @include wf_enqueue_task
--- @include wf_deliver
--- @include wf_open
--- @include wf_task_queue
--- @include wf_task_queue_checked
--- @include wf_record_visibility
--- @include wf_enqueue_step
--- @include wf_need_step
--- @include wf_drop_task
--- @include load_job
--- @include need_available
--- @include K.scheduled
--- @include release_unique
--- @include delete_job
--- @include WF_STATUS_OF
--- @include wf_waiting_steps
--- @include wf_drop_steps
--- @include wf_hold_steps
--- @include wf_release_steps
--- @include flush_counts
local P = KEYS[1]
local id, tid, lease, fence = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local expected = tonumber(ARGV[5])
local ending = ARGV[6] == '1'
local want_next = ARGV[7] == '1'
local parent_kind, parent_body = ARGV[8], ARGV[9]
local n = tonumber(ARGV[15])
local events = {}
for i = 1, n do
  local b = 15 + (i - 1) * 9
  events[i] = { seq = ARGV[b + 1], kind = ARGV[b + 2], at = tonumber(ARGV[b + 3]), body = ARGV[b + 4],
    type = ARGV[b + 5], run = ARGV[b + 6], parent = ARGV[b + 7], prun = ARGV[b + 8], pkg = ARGV[b + 9] }
end
local arm = {}
for _, t in ipairs(cjson.decode(ARGV[10])) do arm[#arm + 1] = { timer = t[1], fire = t[2], armed = t[3] } end
local retire = cjson.decode(ARGV[11])
local children = {}
for _, c in ipairs(cjson.decode(ARGV[12])) do
  children[#children + 1] = { id = c[1], body = c[2], type = c[3], run = c[4], pkg = c[5], queue = c[6], part = c[7] }
end
local steps = {}
for _, s in ipairs(cjson.decode(ARGV[13])) do
  steps[#steps + 1] = { step = s[1], queue = s[2], part = s[3], rc = s[4], weight = s[5], payload = s[6], at = 0 }
end
local given_up = {}
for _, step in ipairs(cjson.decode(ARGV[14])) do given_up[#given_up + 1] = { step = step } end
local now = now_ms(P)

-- 1. the fence, the sequence, and every structure the writes touch.
local j, why = load_job_checked(P, tid, { 'state', 'lease', 'fence', 'queue', 'ukey', 'uwin', 'aux' })
if why then return corrupt_reply(K.job(P, tid), why) end
if not j or j.state ~= 'running' or j.lease ~= lease or j.fence ~= fence then return { E_LEASE_REJECTED } end
wf_need_row(P, id)
need(K.leases(P), 'zset')
need(K.timers(P), 'zset')
need_counts(P, j.queue)
if j.ukey ~= '' then need(K.unique(P), 'hash') end
if #steps > 0 or #given_up > 0 then need(K.wf_steps(P, id), 'hash') end
local bad = structure_error()
if bad then return bad end
local w = wf_load(P, id)
local r = wf_route(P, id)
if r.task ~= tid then return { E_LEASE_REJECTED } end
if w.head ~= expected then return { E_SEQUENCE_CONFLICT, expected, w.head } end
-- A run's step jobs go on its version's queue of the step's queue, as its tasks do: only
-- workers on the run's code replay it to the step.
for _, s in ipairs(steps) do
  local q, long = wf_task_queue_checked(s.queue, r.pkg)
  if not q then return long end
  s.queue = q
end
local inbox = {}
for _, e in ipairs(events) do
  -- A new run (continue-as-new) may be on another version: its tasks go to its queue.
  if e.kind == 'workflow_started' then
    local q, long = wf_task_queue_checked(r.base, e.pkg)
    if not q then return long end
    r.queue = q
  end
end
if ending then
  inbox = rcall('LRANGE', K.wf_inbox(P, id), 0, 999)
  wf_need_task(P, r)
end
for _, c in ipairs(children) do
  wf_need_row(P, c.id)
  c.exists = wf_load(P, c.id).head > 0
  if not c.exists then wf_need_task(P, { queue = wf_task_queue(c.queue, c.pkg), part = c.part }) end
end
local parent_route = nil
if parent_kind ~= '' and w.parent ~= '' then
  wf_need_row(P, w.parent)
  local pw = wf_load(P, w.parent)
  if pw.head > 0 and not WF_CLOSED[pw.status] then
    parent_route = wf_route(P, w.parent)
    wf_need_task(P, parent_route)
  end
end
for _, s in ipairs(steps) do wf_need_step(P, id, s) end
local giving_up = {}
for _, g in ipairs(given_up) do
  giving_up[g.step] = true
  g.job = rcall('HGET', K.wf_steps(P, id), g.step)
  local sj = g.job and load_job(P, g.job)
  if sj then
    need(K.scheduled(P), 'zset')
    need_counts(P, sj.queue)
    need_available(P, sj)
  end
end
-- A commit that moves the run's status (closes it, starts a new run, pauses or resumes
-- it) moves the step jobs its steps wait for with it; one that does not leaves them be.
local moves = false
for _, e in ipairs(events) do
  if WF_STATUS_OF[e.kind] then moves = true end
end
for _, e in ipairs(inbox) do
  if WF_STATUS_OF[string.match(e, '^(.-)\n')] then moves = true end
end
local waiting = {}
if moves then
  for _, s in ipairs(wf_waiting_steps(P, id, w)) do
    if not giving_up[s.step] then waiting[#waiting + 1] = s end
  end
end
bad = structure_error()
if bad then return bad end

-- 2. writes
local old_status, old_run = w.status, w.run
for _, e in ipairs(inbox) do
  local kind, at, body = string.match(e, '^(.-)\n(.-)\n(.*)$')
  -- A step job committed into the inbox before this task gave its step up: the code
  -- took the cancelled path, so the step's result is not history.
  local stale = #given_up > 0 and string.sub(kind, 1, 5) == 'step_' and giving_up[cjson.decode(body).name]
  if not stale then
    events[#events + 1] = { seq = w.head + #events + 1, kind = kind, at = tonumber(at), body = body, type = '', run = '',
      parent = '', prun = '', pkg = '' }
  end
end
if #inbox > 0 then
  rcall('LTRIM', K.wf_inbox(P, id), #inbox, -1)
  -- A pause or resume request waiting in the inbox is history now (wf_pausing).
  if rcall('LLEN', K.wf_inbox(P, id)) == 0 then rcall('HDEL', K.wf(P, id), 'pausereq') end
end
local runseq = nil
for _, e in ipairs(events) do
  if e.kind == 'workflow_started' then runseq = e.seq end
end
if #events > 0 then wf_append_events(P, id, w, events, now) end
if runseq then rcall('HSET', K.wf(P, id), 'runseq', runseq) end
for _, t in ipairs(arm) do wf_arm_timer(P, id, t.timer, t.fire, string.format('%d', t.armed)) end
for _, t in ipairs(retire) do
  rcall('HDEL', K.wf_timers(P, id), t)
  rcall('ZREM', K.timers(P), id .. SEP .. t)
end
for _, c in ipairs(children) do
  if not c.exists then
    wf_open(P, c.id, { body = c.body, type = c.type, run = c.run, parent = id, prun = w.run, pkg = c.pkg },
      { queue = c.queue, part = c.part }, now)
  end
end
for _, g in ipairs(given_up) do
  rcall('HDEL', K.wf_steps(P, id), g.step)
  if g.job then wf_drop_task(P, g.job) end
end
if (WF_CLOSED[w.status] and not WF_CLOSED[old_status]) or w.run ~= old_run then
  wf_drop_steps(P, id, waiting)
elseif w.status == 'paused' and old_status ~= 'paused' then
  wf_hold_steps(P, waiting)
elseif old_status == 'paused' and w.status ~= 'paused' then
  wf_release_steps(P, waiting, now)
end
local step_ids = {}
for i, s in ipairs(steps) do step_ids[i] = wf_enqueue_step(P, id, w, s, now) end
if WF_CLOSED[w.status] then
  -- A closing commit's own step jobs have no step left to wait for them.
  for i, s in ipairs(steps) do
    rcall('HDEL', K.wf_steps(P, id), s.step)
    wf_drop_task(P, step_ids[i])
  end
end
if WF_CLOSED[w.status] and not WF_CLOSED[old_status] then
  rcall('PUBLISH', K.wf_closed(P, id), w.status)
  if parent_route then wf_deliver(P, w.parent, parent_kind, parent_body, now) end
end
if w.status ~= old_status or w.run ~= old_run then
  local closed = ''
  if WF_CLOSED[w.status] then closed = now end
  wf_record_visibility(P, id, { run = w.run, type = w.type, status = w.status, started = w.started, closed = closed,
    parent = w.parent, pkg = w.pkg, memo = '' }, now)
end
local next_task = ''
if ending then
  rcall('ZREM', K.leases(P), tid)
  release_unique(P, tid, j)
  delete_job(P, tid, j)
  rcall('HSET', K.wf(P, id), 'task', '')
  r.task, r.task_state = '', ''
  if (want_next or #inbox > 0) and not WF_CLOSED[w.status] then next_task = wf_enqueue_task(P, id, w, r, now) end
end
flush_counts(P)
return { OK, w.head, next_task, unpack(step_ids) }
