--[[
wf_put_package.lua: stores a package record (workflow type + content hash) and points
the given workflow types' routes at its content hash. Re-putting a record replaces it.

KEYS[1]  namespace prefix; derived keys (lib.lua): pkgs, pkgidx, routes, routeidx, clock
ARGV[1]  workflow type
ARGV[2]  content hash
ARGV[3]  deployed (ms; -1 = the store clock now)
ARGV[4]  record bytes
ARGV[5]  number of routes n
ARGV[6..5+n]  workflow types to route to the content hash
Replies  {0}
Cost     O(n log N)
]]
--- @include rcall
--- @include OK
--- @include now_ms
--- @include SEP
--- @include K.packages
--- @include K.package_index
--- @include K.package_routes
--- @include K.package_route_index
--- @include pad_ms
local P = KEYS[1]
local typ, hash = ARGV[1], ARGV[2]
local field = typ .. SEP .. hash
local deployed = tonumber(ARGV[3])
if deployed < 0 then deployed = now_ms(P) end
local prev = rcall('HGET', K.packages(P), field)
if prev then
  rcall('ZREM', K.package_index(P), string.match(prev, '^(%d+)\n') .. SEP .. field)
end
rcall('HSET', K.packages(P), field, pad_ms(deployed) .. '\n' .. ARGV[4])
rcall('ZADD', K.package_index(P), '0', pad_ms(deployed) .. SEP .. field)
for i = 1, tonumber(ARGV[5]) do
  rcall('HSET', K.package_routes(P), ARGV[5 + i], hash)
  rcall('ZADD', K.package_route_index(P), '0', ARGV[5 + i])
end
return { OK }
