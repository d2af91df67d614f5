--[[
wf_signal.lua: delivers an event from outside a workflow's code to its open run: a
signal (signal_received) or an operator's cancel request (workflow_cancel_requested).
While the run's task is running the event waits in the inbox and that task's commit
appends it; otherwise it is appended now and a task is enqueued when none is
outstanding. A cancel request marks the run on the workflow's row ('cancelreq', the
run's runseq), and a repeat while it is pending changes nothing: 'already' (a new run,
of a continue-as-new, has another runseq; a retry, which reopens the run, clears it).

KEYS[1]  namespace prefix; derived keys (lib.lua): wf:<id>, wfh:<id>, wfruns:<id>,
         wfinbox:<id>, wftimers:<id>, wfstatus:<s>, wfq:*, job:<task id>, queues,
         q:<queue>:{counts,ring,drr,p:<part>,wake}, quarantine, held:<fp>, clock
ARGV[1]  workflow id
ARGV[2]  event kind: signal_received | workflow_cancel_requested
ARGV[3]  event body (JSON, built by Go)
Replies  {0, 'inbox' | 'appended' | 'already' (a cancel of the run requested before)}
         {-22}            the workflow has no history
         {-23, status}    the run is closed
Cost     O(log N)
]]
--- @include wf_load_open
--- @include rcall
--- @include K.wf
--- @include OK
--- @include now_ms
--- @include wf_route
--- @include wf_need_task
--- @include structure_error
--- @include wf_deliver
--- @include flush_counts
local P = KEYS[1]
local id = ARGV[1]
local kind = ARGV[2]
if kind ~= 'signal_received' and kind ~= 'workflow_cancel_requested' then
  return redis.error_reply('headgate: wf_signal: unknown event kind ' .. kind)
end
local now = now_ms(P)
local w, refused = wf_load_open(P, id)
if not w then return refused end
local r = wf_route(P, id)
local run = tostring(r.runseq)
local cancel = kind == 'workflow_cancel_requested'
if cancel and rcall('HGET', K.wf(P, id), 'cancelreq') == run then return { OK, 'already' } end
wf_need_task(P, r)
local bad = structure_error()
if bad then return bad end
local how = wf_deliver(P, id, kind, ARGV[3], now)
if cancel then rcall('HSET', K.wf(P, id), 'cancelreq', run) end
flush_counts(P)
return { OK, how }
