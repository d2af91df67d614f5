--[[
wf_put_package_route.lua: routes a workflow type to a content hash: new runs of the type
start on that package version.

KEYS[1]  namespace prefix; derived keys (lib.lua): routes, routeidx
ARGV[1]  workflow type
ARGV[2]  content hash
Replies  {0}
Cost     O(log N)
]]
--- @include rcall
--- @include OK
--- @include K.package_routes
--- @include K.package_route_index
local P = KEYS[1]
rcall('HSET', K.package_routes(P), ARGV[1], ARGV[2])
rcall('ZADD', K.package_route_index(P), '0', ARGV[1])
return { OK }
