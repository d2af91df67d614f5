--[[
wf_record_visibility.lua: upserts a workflow's visibility row. One row per workflow id:
a new run's row replaces its predecessor's, and the row moves in the listing indexes.

KEYS[1]  namespace prefix; derived keys (lib.lua): vis:<id>,
         visq:{all,type:<t>,status:<s>,ts:<s>:<t>,parent:<p>}, clock
ARGV[1]  workflow id
ARGV[2]  run id
ARGV[3]  workflow type
ARGV[4]  status
ARGV[5]  started (ms; -1 = the store clock now)
ARGV[6]  closed (ms, or '' while open)
ARGV[7]  parent workflow id ('' = none)
ARGV[8]  package version
ARGV[9]  memo
Replies  {0}
Cost     O(log N): up to 5 ZREM and 5 ZADD
]]
--- @include OK
--- @include now_ms
--- @include wf_record_visibility
local P = KEYS[1]
local now = now_ms(P)
local started = tonumber(ARGV[5])
if started < 0 then started = now end
wf_record_visibility(P, ARGV[1], { run = ARGV[2], type = ARGV[3], status = ARGV[4], started = started,
  closed = ARGV[6], parent = ARGV[7], pkg = ARGV[8], memo = ARGV[9] }, now)
return { OK }
