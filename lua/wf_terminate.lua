--[[
wf_terminate.lua: ends a workflow's open run at once, without running its code: its
task job is removed (a running holder is told on the cancel channel, and its commit is
refused), the events in its inbox are dropped, a workflow_terminated event closes the
run, the named timers are retired, the step jobs its steps wait for are dropped (a
running one's commit is refused: StepNotPending), the closed channel is published and a
parent is told (child_failed).

KEYS[1]  namespace prefix; derived keys (lib.lua): wf:<id>, wfh:<id>, wfruns:<id>,
         wfinbox:<id>, wftimers:<id>, wfsteps:<id>, wfstatus:<s>, wfq:*, timers, vis:<id>,
         visq:*, job:<task id>, job:<step job id>, leases, scheduled, retained,
         q:<queue>:{counts,ring,drr,p:<part>,wake},
         held:<fp>, parked:<class>, verruns, clock; the parent's keys; channels cancelled,
         wfclosed:<id>
ARGV[1]  workflow id
ARGV[2]  workflow_terminated body (JSON, built by Go)
ARGV[3]  child_failed body for the parent (JSON, built by Go)
ARGV[4]  the run's armed timers: a JSON array of timer ids
Replies  {0}
         {-22}            the workflow has no history
         {-23, status}    the run is closed
Cost     O((timers + steps waiting) * log N)
]]
--- @include wf_load_open
--- @include wf_event
--- @include rcall
--- @include OK
--- @include now_ms
--- @include need
--- @include K.scheduled
--- @include K.leases
--- @include K.timers
--- @include K.wf
--- @include K.wf_inbox
--- @include K.wf_timers
--- @include K.wf_closed
--- @include SEP
--- @include WF_CLOSED
--- @include wf_load
--- @include wf_route
--- @include wf_need_row
--- @include wf_need_task
--- @include structure_error
--- @include wf_append_events
--- @include wf_drop_task
--- @include wf_deliver
--- @include wf_record_visibility
--- @include wf_waiting_steps
--- @include wf_drop_steps
--- @include flush_counts
local P = KEYS[1]
local id = ARGV[1]
local now = now_ms(P)
need(K.scheduled(P), 'zset')
need(K.leases(P), 'zset')
need(K.timers(P), 'zset')
local w, refused = wf_load_open(P, id)
if not w then return refused end
local r = wf_route(P, id)
wf_need_task(P, r)
local parent_open = false
if w.parent ~= '' then
  wf_need_row(P, w.parent)
  local pw = wf_load(P, w.parent)
  if pw.head > 0 and not WF_CLOSED[pw.status] then
    parent_open = true
    wf_need_task(P, wf_route(P, w.parent))
  end
end
local steps = wf_waiting_steps(P, id, w)
local bad = structure_error()
if bad then return bad end
if r.task_state ~= '' then wf_drop_task(P, r.task) end
wf_drop_steps(P, id, steps)
rcall('DEL', K.wf_inbox(P, id))
rcall('HDEL', K.wf(P, id), 'pausereq')
rcall('HSET', K.wf(P, id), 'task', '')
wf_append_events(P, id, w, { wf_event(w, 'workflow_terminated', ARGV[2], now) }, now)
for _, t in ipairs(cjson.decode(ARGV[4])) do
  rcall('HDEL', K.wf_timers(P, id), t)
  rcall('ZREM', K.timers(P), id .. SEP .. t)
end
rcall('PUBLISH', K.wf_closed(P, id), w.status)
wf_record_visibility(P, id, { run = w.run, type = w.type, status = w.status, started = w.started, closed = now,
  parent = w.parent, pkg = w.pkg, memo = '' }, now)
if parent_open then wf_deliver(P, w.parent, 'child_failed', ARGV[3], now) end
flush_counts(P)
return { OK }
