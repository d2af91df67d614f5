//go:build headgate_noindex

package headgate

import "strings"

// The heads of the definitions in lua/lib.lua through which every transition moves jobs
// in the job indexes, and index_kind_known, which reads the kinds they keep (its nil
// reads as false: enqueue reads the queue's listing, as it would with no kinds to read).
var indexMoveHeads = []string{
	"local function index_move(P, id, j, from, to, at)\n",
	"local function index_move_all(P, q, kind, part, ids, from, to, at)\n",
	"local function index_kind_known(P, q, kind)\n",
}

// libSource, built with -tags headgate_noindex, makes index_move, index_move_all and
// index_kind_known return at once: no transition keeps the job indexes or the partition
// counts. It exists to measure what keeping them costs each transition (bench/callgrind),
// never to run a store: listings, counts by partition and the bulk verbs see no job.
func libSource(src string) string {
	for _, head := range indexMoveHeads {
		if !strings.Contains(src, head) {
			panic("headgate_noindex: lua/lib.lua has no " + strings.TrimSpace(head))
		}
		src = strings.Replace(src, head, head+"  do return end\n", 1)
	}
	return src
}
