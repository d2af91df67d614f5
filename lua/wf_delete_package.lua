--[[
wf_delete_package.lua: deletes a package record; routes that point at it stay (a route
is changed by putting another package or route).

KEYS[1]  namespace prefix; derived keys (lib.lua): pkgs, pkgidx
ARGV[1]  workflow type
ARGV[2]  content hash
Replies  {0, 1} deleted | {0, 0} absent
Cost     O(log N)
]]
--- @include rcall
--- @include OK
--- @include SEP
--- @include K.packages
--- @include K.package_index
local P = KEYS[1]
local field = ARGV[1] .. SEP .. ARGV[2]
local prev = rcall('HGET', K.packages(P), field)
if not prev then return { OK, 0 } end
rcall('HDEL', K.packages(P), field)
rcall('ZREM', K.package_index(P), string.match(prev, '^(%d+)\n') .. SEP .. field)
return { OK, 1 }
