--[[
wf_start.lua: starts a workflow run under an id, idempotently: an id that has a history
already is left as it is and its current run is returned. A new id gets its
workflow_started event (seq 1), its route (queue, partition), its visibility row and its
first task, a job on the route that a worker serving the workflow type admits.

The run is pinned to a package version: the one given, else the workflow type's package
route (none: the run is unversioned). Its tasks go on the version's task queue
(wf_task_queue), which only workers serving the version admit. A version that worker
deployments list, none of them active, is draining and takes no new run: refused before
any write.

KEYS[1]  namespace prefix; derived keys (lib.lua): wf:<id>, wfh:<id>, wfruns:<id>,
         wfinbox:<id>, wftimers:<id>, wfids, wfstatus:<s>, wfq:*, vis:<id>, visq:*,
         job:<task id>, queues, q:<queue>:{counts,ring,drr,p:<part>,wake}, quarantine,
         held:<fp>, routes, verdeploys, verruns, clock
ARGV[1]  workflow id
ARGV[2]  workflow_started body (JSON, built by Go; the route's version is added to it)
ARGV[3]  workflow type
ARGV[4]  run id
ARGV[5]  package version ('' = the workflow type's route, if any)
ARGV[6]  queue
ARGV[7]  partition
Replies  {0, 1, run id, task id}            started
         {0, 0, run id, status}             the id existed: its current run
         {-25, version}                     VersionDraining: nothing written
         {-26, version, task queue}         the route's version makes the task queue
                                            longer than a queue name: nothing written
Cost     O(log N)
]]
--- @include rcall
--- @include OK
--- @include E_VERSION_DRAINING
--- @include now_ms
--- @include need
--- @include K.package_routes
--- @include K.version_deployments
--- @include version_draining
--- @include wf_load
--- @include wf_need_row
--- @include wf_need_task
--- @include wf_task_queue_checked
--- @include structure_error
--- @include wf_open
--- @include flush_counts
local P = KEYS[1]
local id, body, pkg = ARGV[1], ARGV[2], ARGV[5]
local now = now_ms(P)
wf_need_row(P, id)
need(K.package_routes(P), 'hash')
need(K.version_deployments(P), 'hash')
local bad = structure_error()
if bad then return bad end
local w = wf_load(P, id)
if w.head > 0 then return { OK, 0, w.run, w.status } end
if pkg == '' then
  pkg = rcall('HGET', K.package_routes(P), ARGV[3]) or ''
  -- Go built the body without a version; JSON keys are unordered, so it leads.
  if pkg ~= '' then body = '{"pkg":' .. cjson.encode(pkg) .. ',' .. string.sub(body, 2) end
end
if pkg ~= '' and version_draining(P, pkg) then return { E_VERSION_DRAINING, pkg } end
local route = { queue = ARGV[6], part = ARGV[7] }
local tq, long = wf_task_queue_checked(route.queue, pkg)
if not tq then return long end
wf_need_task(P, { queue = tq, part = route.part })
bad = structure_error()
if bad then return bad end
local tid = wf_open(P, id, { body = body, type = ARGV[3], run = ARGV[4], parent = '', prun = '', pkg = pkg }, route, now)
flush_counts(P)
return { OK, 1, ARGV[4], tid }
