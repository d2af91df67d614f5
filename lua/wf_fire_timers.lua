--[[
wf_fire_timers.lua: fires the durable timers due on the store clock, up to a limit, in
fire order: each is retired and its workflow gets a timer_fired event (appended, or in
the inbox while the workflow's task runs) and a task when none is outstanding. A timer
of a workflow that is closed or gone is only retired. The maintenance duty runs it.

KEYS[1]  namespace prefix; derived keys (lib.lua): timers, wftimers:<id>, wf:<id>,
         wfh:<id>, wfruns:<id>, wfinbox:<id>, wfstatus:<s>, wfq:*, job:<task id>,
         queues, q:<queue>:{counts,ring,drr,p:<part>,wake}, quarantine, held:<fp>, clock
ARGV[1]  limit, the most timers fired
Replies  {0, fired, next fire ms (-1 = no timer armed)}
Cost     O(limit * log N)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include need
--- @include K.timers
--- @include wf_load
--- @include wf_route
--- @include wf_need_row
--- @include wf_need_task
--- @include structure_error
--- @include wf_deliver
--- @include flush_counts
--- @include WF_CLOSED
--- @include K.wf_timers
local P = KEYS[1]
local limit = tonumber(ARGV[1])
local now = now_ms(P)
need(K.timers(P), 'zset')
local bad = structure_error()
if bad then return bad end
local due = rcall('ZRANGEBYSCORE', K.timers(P), '-inf', now, 'LIMIT', 0, limit)
local fire = {}
for _, m in ipairs(due) do
  local wf, timer = string.match(m, '^(.-)\31(.*)$')
  if wf then
    wf_need_row(P, wf)
    local f = { wf = wf, timer = timer, member = m }
    local w = wf_load(P, wf)
    if w.head > 0 and not WF_CLOSED[w.status] then
      f.open = true
      wf_need_task(P, wf_route(P, wf))
    end
    fire[#fire + 1] = f
  end
end
bad = structure_error()
if bad then return bad end
for _, f in ipairs(fire) do
  rcall('ZREM', K.timers(P), f.member)
  rcall('HDEL', K.wf_timers(P, f.wf), f.timer)
  if f.open then
    wf_deliver(P, f.wf, 'timer_fired', cjson.encode({ kind = 'timer_fired', timer = f.timer }), now)
  end
end
flush_counts(P)
local next_due = rcall('ZRANGE', K.timers(P), 0, 0, 'WITHSCORES')
local nxt = -1
if next_due[2] then nxt = tonumber(next_due[2]) end
return { OK, #fire, nxt }
