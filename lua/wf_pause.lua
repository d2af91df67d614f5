--[[
wf_pause.lua: pauses a workflow's open run: a workflow_paused event, and its task
waiting for admission is staged (pending) so no worker admits it; the tasks that follow
while the run is paused are staged too, until wf_resume. A task running when the pause
arrives finishes: the pause waits in the inbox and takes effect at that task's commit,
which stages the next task.

KEYS[1]  namespace prefix; derived keys (lib.lua): wf:<id>, wfh:<id>, wfruns:<id>,
         wfinbox:<id>, wftimers:<id>, wfstatus:<s>, wfq:*, job:<task id>, scheduled,
         q:<queue>:{counts,ring,drr,p:<part>,wake}, held:<fp>, parked:<class>, clock
ARGV[1]  workflow id
ARGV[2]  workflow_paused body (JSON, built by Go)
Replies  {0, 'paused' | 'requested' (in the inbox) | 'already'}
         {-22}            the workflow has no history
         {-23, status}    the run is closed
Cost     O(log N)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include need
--- @include K.scheduled
--- @include K.wf_inbox
--- @include E_WORKFLOW_NOT_FOUND
--- @include E_WORKFLOW_CLOSED
--- @include WF_CLOSED
--- @include wf_load
--- @include wf_route
--- @include wf_need_row
--- @include wf_need_task
--- @include structure_error
--- @include wf_append_events
--- @include wf_stage_task
--- @include flush_counts
local P = KEYS[1]
local id = ARGV[1]
local now = now_ms(P)
wf_need_row(P, id)
need(K.scheduled(P), 'zset')
local bad = structure_error()
if bad then return bad end
local w = wf_load(P, id)
if w.head == 0 then return { E_WORKFLOW_NOT_FOUND } end
if WF_CLOSED[w.status] then return { E_WORKFLOW_CLOSED, w.status } end
if w.status == 'paused' then return { OK, 'already' } end
local r = wf_route(P, id)
wf_need_task(P, r)
bad = structure_error()
if bad then return bad end
if r.task_state == 'running' then
  rcall('RPUSH', K.wf_inbox(P, id), 'workflow_paused\n' .. now .. '\n' .. ARGV[2])
  return { OK, 'requested' }
end
wf_append_events(P, id, w, { { seq = w.head + 1, kind = 'workflow_paused', at = now, body = ARGV[2], type = '', run = '',
  parent = '', prun = '', pkg = '' } }, now)
if r.task_state ~= '' then wf_stage_task(P, r.task) end
flush_counts(P)
return { OK, 'paused' }
