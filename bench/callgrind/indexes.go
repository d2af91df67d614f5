//go:build !headgate_noindex

package main

// indexes says whether the store keeps its job indexes: it does, unless built with
// -tags headgate_noindex (indexes_noindex.go).
const indexes = "on"
