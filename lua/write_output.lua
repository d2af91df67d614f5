--[[
write_output.lua: the holder of a running job stores its output, stamped with the fence
and the store time. A later write replaces it. A job whose data is corrupt, or an output
key of another type, is refused with nothing written.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, output:<id>, clock
ARGV[1]  job id
ARGV[2]  lease id
ARGV[3]  fence
ARGV[4]  schema version (> 0)
ARGV[5]  bytes
Replies  {0, store time ms} | {-5} LeaseRejected | {-9, key, why} Corrupt
Cost     O(1)
]]
--- @include rcall
--- @include K.output
--- @include OK
--- @include E_LEASE_REJECTED
--- @include now_ms
--- @include mark_aux
--- @include holder_checked
--- @include corrupt_reply
--- @include K.job
--- @include first_bad_key
local P = KEYS[1]
local id = ARGV[1]
local j, why = holder_checked(P, id, ARGV[2], ARGV[3])
if why then return corrupt_reply(K.job(P, id), why) end
if not j then return { E_LEASE_REJECTED } end
local bad
bad, why = first_bad_key({ { K.output(P, id), 'hash' } })
if bad then return corrupt_reply(bad, why) end
local now = now_ms(P)
mark_aux(P, id)
rcall('HSET', K.output(P, id), 'schema', ARGV[4], 'bytes', ARGV[5], 'fence', j.fence, 'at', now)
return { OK, now }
