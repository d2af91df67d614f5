package main

import (
	"flag"
	"io"
)

func newTestFlagSet(c *cli) *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.globalFlags(fs)
	return fs
}
