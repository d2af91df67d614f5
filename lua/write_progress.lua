--[[
write_progress.lua: the holder of a running job stores its progress, stamped with the
fence and the store time. A later write replaces it. A job whose data is corrupt, or a
progress key of another type, is refused with nothing written.

KEYS[1]  namespace prefix; derived keys (lib.lua): job:<id>, progress:<id>, clock
ARGV[1]  job id
ARGV[2]  lease id
ARGV[3]  fence
ARGV[4]  current
ARGV[5]  total
ARGV[6]  message
Replies  {0, store time ms} | {-5} LeaseRejected | {-9, key, why} Corrupt
Cost     O(1)
]]
--- @include K.progress
--- @include write_held_hash
local P = KEYS[1]
local id = ARGV[1]
return write_held_hash(P, id, ARGV[2], ARGV[3], K.progress(P, id),
  { 'current', ARGV[4], 'total', ARGV[5], 'message', ARGV[6] })
