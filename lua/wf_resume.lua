--[[
wf_resume.lua: resumes a paused workflow run: a workflow_resumed event, its staged
task is made available (or a task is enqueued when it has none), and so are the staged
step jobs its steps wait for (scheduled, when a retry's backoff still runs). A pause
still waiting in the inbox of a running task is answered in the inbox too: that task's
commit applies both, in order. A run neither paused nor with a pause requested (the
row's 'pausereq', the last pause or resume waiting in the inbox) is answered
'not_paused' and nothing is written.

KEYS[1]  namespace prefix; derived keys (lib.lua): wf:<id>, wfh:<id>, wfruns:<id>,
         wfinbox:<id>, wftimers:<id>, wfsteps:<id>, wfstatus:<s>, wfq:*, job:<task id>,
         job:<step job id>, queues, scheduled,
         q:<queue>:{counts,ring,drr,p:<part>,wake}, quarantine, held:<fp>, clock
ARGV[1]  workflow id
ARGV[2]  workflow_resumed body (JSON, built by Go)
Replies  {0, 'resumed' | 'requested' (in the inbox) | 'not_paused'}
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
--- @include K.wf_inbox
--- @include wf_route
--- @include wf_need_task
--- @include structure_error
--- @include wf_append_events
--- @include wf_enqueue_task
--- @include load_job
--- @include make_available
--- @include wake
--- @include wf_waiting_steps
--- @include wf_release_steps
--- @include flush_counts
local P = KEYS[1]
local id = ARGV[1]
local now = now_ms(P)
local w, refused = wf_load_open(P, id)
if not w then return refused end
local r = wf_route(P, id)
wf_need_task(P, r)
local steps = {}
if r.task_state ~= 'running' and w.status == 'paused' then steps = wf_waiting_steps(P, id, w) end
local bad = structure_error()
if bad then return bad end
if r.task_state == 'running' then
  if not wf_pausing(P, id, w) then return { OK, 'not_paused' } end
  rcall('RPUSH', K.wf_inbox(P, id), 'workflow_resumed\n' .. now .. '\n' .. ARGV[2])
  rcall('HSET', K.wf(P, id), 'pausereq', 'resumed')
  return { OK, 'requested' }
end
if w.status ~= 'paused' then return { OK, 'not_paused' } end
wf_append_events(P, id, w, { wf_event(w, 'workflow_resumed', ARGV[2], now) }, now)
if r.task_state == 'pending' then
  local j = load_job(P, r.task)
  make_available(P, r.task, j, now)
  wake(P, j.queue)
elseif r.task_state == '' then
  wf_enqueue_task(P, id, w, r, now)
end
wf_release_steps(P, steps, now)
flush_counts(P)
return { OK, 'resumed' }
