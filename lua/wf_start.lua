--[[
wf_start.lua: starts a workflow run under an id, idempotently: an id that has a history
already is left as it is and its current run is returned. A new id gets its
workflow_started event (seq 1), its route (queue, partition), its visibility row and its
first task, a job on the route that any worker serving the workflow type admits.

KEYS[1]  namespace prefix; derived keys (lib.lua): wf:<id>, wfh:<id>, wfruns:<id>,
         wfinbox:<id>, wftimers:<id>, wfids, wfstatus:<s>, wfq:*, vis:<id>, visq:*,
         job:<task id>, queues, q:<queue>:{counts,ring,drr,p:<part>,wake}, quarantine,
         held:<fp>, clock
ARGV[1]  workflow id
ARGV[2]  workflow_started body (JSON, built by Go)
ARGV[3]  workflow type
ARGV[4]  run id
ARGV[5]  package version
ARGV[6]  queue
ARGV[7]  partition
Replies  {0, 1, run id, task id}            started
         {0, 0, run id, status}             the id existed: its current run
Cost     O(log N)
]]
--- @include OK
--- @include now_ms
--- @include wf_load
--- @include wf_need_row
--- @include wf_need_task
--- @include structure_error
--- @include wf_open
--- @include flush_counts
local P = KEYS[1]
local id = ARGV[1]
local now = now_ms(P)
wf_need_row(P, id)
local bad = structure_error()
if bad then return bad end
local w = wf_load(P, id)
if w.head > 0 then return { OK, 0, w.run, w.status } end
local route = { queue = ARGV[6], part = ARGV[7] }
wf_need_task(P, route)
bad = structure_error()
if bad then return bad end
local tid = wf_open(P, id, { body = ARGV[2], type = ARGV[3], run = ARGV[4], parent = '', prun = '', pkg = ARGV[5] },
  route, now)
flush_counts(P)
return { OK, 1, ARGV[4], tid }
