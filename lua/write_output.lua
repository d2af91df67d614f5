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
--- @include K.output
--- @include write_held_hash
local P = KEYS[1]
local id = ARGV[1]
return write_held_hash(P, id, ARGV[2], ARGV[3], K.output(P, id), { 'schema', ARGV[4], 'bytes', ARGV[5] })
