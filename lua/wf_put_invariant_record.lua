--[[
wf_put_invariant_record.lua: records a workloop invariant's new state. The new record
becomes the current generation, the old current joins the previous ones (newest first),
and in the same write the previous generations recorded before the prune time go, as do
those beyond the cap. The current generation is never pruned.

KEYS[1]  namespace prefix; derived keys (lib.lua): inv:<invariant>\x1f<loop id>, clock
ARGV[1]  workloop id
ARGV[2]  invariant name
ARGV[3]  recorded (ms; -1 = the store clock now)
ARGV[4]  record bytes
ARGV[5]  prune before (ms): previous generations recorded earlier are removed
ARGV[6]  cap, the most previous generations kept
Replies  {0, removed}
Cost     O(cap)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include K.invariant_records
local P = KEYS[1]
local k = K.invariant_records(P, ARGV[1], ARGV[2])
local recorded = tonumber(ARGV[3])
if recorded < 0 then recorded = now_ms(P) end
local prune_before = tonumber(ARGV[5])
local cap = tonumber(ARGV[6])
local total = rcall('LLEN', k)
local prev = rcall('LRANGE', k, 0, cap - 1) -- the old current and the previous generations kept so far
local kept = {}
for _, g in ipairs(prev) do
  local at = tonumber(string.match(g, '^(%d+)\n'))
  if #kept < cap and at and at >= prune_before then kept[#kept + 1] = g end
end
rcall('DEL', k)
rcall('RPUSH', k, recorded .. '\n' .. ARGV[4])
if #kept > 0 then rcall('RPUSH', k, unpack(kept)) end
return { OK, total - #kept }
