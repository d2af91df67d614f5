--[[
cancel.lua: an operator cancels an unfinished job. It becomes cancelled (terminal); a
running holder loses its lease, so its later ack is LeaseRejected, and the holder hears
of it at once: the script publishes the lease on the namespace's cancel channel, to which
every worker subscribes, so the handler's context is cancelled within a round trip
rather than at the next lease renewal.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, leases, scheduled, retained,
         unique, held:<fp>, clock, q:<queue>:{counts,ring,drr,p:<part>},
         q:<queue>:w:<worker>:{ring,drr,p:<part>}; channel (not a key): cancelled
ARGV[1]  job id
Replies  {0} | {-7} not found | {-8, state} already terminal
Publish  on K.cancelled, when the job was running: "<fence> <job id>\n<lease id>"
Cost     O(log N)
]]
--- @include rcall
--- @include K.scheduled
--- @include K.cancelled
--- @include OK
--- @include E_NOT_FOUND
--- @include E_NOT_CANCELLABLE
--- @include now_ms
--- @include UNFINISHED
--- @include flush_counts
--- @include unindex_available_job
--- @include load_job
--- @include drop_lease
--- @include finalize
local P = KEYS[1]
local id = ARGV[1]
local j = load_job(P, id)
if not j then return { E_NOT_FOUND } end
if not UNFINISHED[j.state] then return { E_NOT_CANCELLABLE, j.state } end
local now = now_ms(P)
local running = j.state == 'running'
if running then
  drop_lease(P, id)
elseif j.state == 'available' then
  unindex_available_job(P, id, j)
elseif j.state == 'scheduled' or j.state == 'retryable' then
  rcall('ZREM', K.scheduled(P), id)
end
finalize(P, id, j, 'cancelled', now)
flush_counts(P)
if running then
  rcall('PUBLISH', K.cancelled(P), string.format('%d', j.fence) .. ' ' .. id .. '\n' .. j.lease)
end
return { OK }
