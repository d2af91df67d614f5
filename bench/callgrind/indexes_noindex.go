//go:build headgate_noindex

package main

// indexes: built with -tags headgate_noindex, the store's index_move and index_move_all
// return at once (libsource_noindex.go in the root package), so the counts leave out what
// keeping the job indexes costs. Compare with a run of the default build.
const indexes = "off (-tags headgate_noindex)"
