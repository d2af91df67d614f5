//go:build headgate_noindex

package headgate

import "strings"

// indexMoveHead starts index_move's definition in lua/lib.lua.
const indexMoveHead = "local function index_move(P, id, j, from, to, at)\n"

// libSource, built with -tags headgate_noindex, makes index_move return at once: no
// transition keeps the job indexes or the partition counts. It exists to measure what
// keeping them costs each transition (bench/callgrind, README "What it costs"), never to
// run a store: listings, counts by partition and the bulk verbs see no job.
func libSource(src string) string {
	if !strings.Contains(src, indexMoveHead) {
		panic("headgate_noindex: lua/lib.lua has no " + strings.TrimSpace(indexMoveHead))
	}
	return strings.Replace(src, indexMoveHead, indexMoveHead+"  do return end\n", 1)
}
