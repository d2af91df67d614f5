--[[
wf_pause.lua: pauses a workflow's open run: a workflow_paused event, and its task and
the step jobs its steps wait for, those waiting for admission, are staged (pending) so
no worker admits them; the tasks and step jobs that follow while the run is paused are
staged too, until wf_resume. A task or step job running when the pause arrives
finishes (a running task's pause waits in the inbox and takes effect at that task's
commit, which stages the next task and the step jobs). A pause requested already, or a
paused run, is answered 'already' and nothing is written: the row's 'pausereq' holds
the last pause or resume waiting in the inbox.

KEYS[1]  namespace prefix; derived keys (lib.lua): wf:<id>, wfh:<id>, wfruns:<id>,
         wfinbox:<id>, wftimers:<id>, wfsteps:<id>, wfstatus:<s>, wfq:*, job:<task id>,
         job:<step job id>, scheduled,
         q:<queue>:{counts,ring,drr,p:<part>,wake}, held:<fp>, parked:<class>, clock
ARGV[1]  workflow id
ARGV[2]  workflow_paused body (JSON, built by Go)
Replies  {0, 'paused' | 'requested' (in the inbox) | 'already' (paused, or a pause requested)}
         {-22}            the workflow has no history
         {-23, status}    the run is closed
Cost     O((1 + steps waiting) * log N)
]]
--- @include wf_load_open
--- @include wf_pausing
--- @include K.wf
--- @include wf_event
--- @include rcall
--- @include OK
--- @include now_ms
--- @include need
--- @include K.scheduled
--- @include K.wf_inbox
--- @include wf_route
--- @include wf_need_task
--- @include structure_error
--- @include wf_append_events
--- @include wf_stage_task
--- @include wf_waiting_steps
--- @include wf_hold_steps
--- @include flush_counts
local P = KEYS[1]
local id = ARGV[1]
local now = now_ms(P)
need(K.scheduled(P), 'zset')
local w, refused = wf_load_open(P, id)
if not w then return refused end
if wf_pausing(P, id, w) then return { OK, 'already' } end
local r = wf_route(P, id)
wf_need_task(P, r)
local steps = {}
if r.task_state ~= 'running' then steps = wf_waiting_steps(P, id, w) end
local bad = structure_error()
if bad then return bad end
if r.task_state == 'running' then
  rcall('RPUSH', K.wf_inbox(P, id), 'workflow_paused\n' .. now .. '\n' .. ARGV[2])
  rcall('HSET', K.wf(P, id), 'pausereq', 'paused')
  return { OK, 'requested' }
end
wf_append_events(P, id, w, { wf_event(w, 'workflow_paused', ARGV[2], now) }, now)
if r.task_state ~= '' then wf_stage_task(P, r.task) end
wf_hold_steps(P, steps)
flush_counts(P)
return { OK, 'paused' }
