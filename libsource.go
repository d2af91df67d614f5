//go:build !headgate_noindex

package headgate

// libSource is lua/lib.lua as the scripts are assembled from it: the file itself. A build
// with -tags headgate_noindex (libsource_noindex.go) changes it, for measuring only.
func libSource(src string) string { return src }
