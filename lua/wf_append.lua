--[[
wf_append.lua: appends events to a workflow's history with optimistic concurrency. The
append applies only when the history's head is the caller's expected sequence; the
events (seq expected+1, expected+2, ..., checked by Go) are stored, and the workflow's
row (head, derived status, type, run, parent, package, start and close times), its run
chain and its listing indexes move with them, so no listing ever folds a history. An
empty append only checks the head.

KEYS[1]  namespace prefix; derived keys (lib.lua): wf:<id>, wfh:<id>, wfruns:<id>, wfids,
         wfstatus:<status>, wfq:{all,type:<t>,status:<s>,ts:<s>:<t>,parent:<p>}, verruns,
         clock
ARGV[1]  workflow id
ARGV[2]  expected sequence (the head the caller read; 0 for a new history)
ARGV[3]  number of events n; then n groups of 9:
         seq, kind, recorded ms (0 = the store clock), body, workflow type, run id,
         parent workflow id, parent run id, package version (the last five are read
         for workflow_started only)
Replies  {0, head} | {-20, expected, found} the head is not the expected sequence
Cost     O(n + log N): n events, up to 10 index updates per status change
]]
--- @include OK
--- @include now_ms
--- @include E_SEQUENCE_CONFLICT
--- @include wf_load
--- @include wf_append_events
--- @include need
--- @include structure_error
--- @include K.version_runs
local P = KEYS[1]
local id = ARGV[1]
local expected = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
if not need(K.version_runs(P), 'hash') then return structure_error() end
local w = wf_load(P, id)
if w.head ~= expected then return { E_SEQUENCE_CONFLICT, expected, w.head } end
if n == 0 then return { OK, w.head } end
local events = {}
for i = 1, n do
  local b = 3 + (i - 1) * 9
  events[i] = { seq = ARGV[b + 1], kind = ARGV[b + 2], at = tonumber(ARGV[b + 3]), body = ARGV[b + 4],
    type = ARGV[b + 5], run = ARGV[b + 6], parent = ARGV[b + 7], prun = ARGV[b + 8], pkg = ARGV[b + 9] }
end
return { OK, wf_append_events(P, id, w, events, now_ms(P)) }
