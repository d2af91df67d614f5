package main

import (
	"flag"
	"io"
	"testing"
)

// TestFlagsNameTheirValue: every flag that takes a value says in its usage what the value
// is (a `back-quoted` word), so help never prints the flag package's bare "value".
func TestFlagsNameTheirValue(t *testing.T) {
	t.Parallel()
	for _, cmd := range commands {
		if cmd.flags == nil {
			continue
		}
		c := &cli{}
		fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cmd.flags(fs, c)
		cronFlagSets.Delete(c)
		dashboardFlags.Delete(c)
		policyJSON.Delete(c)
		fs.VisitAll(func(f *flag.Flag) {
			if name, _ := flag.UnquoteUsage(f); name == "value" {
				t.Errorf("headgate %s -%s: its help says \"-%s value\"; name the value in its usage", cmd.name, f.Name, f.Name)
			}
		})
	}
}
