package main

import (
	"flag"
	"testing"
)

// TestFlagsNameTheirValue: every flag that takes a value says in its usage what the value
// is (a `back-quoted` word), so help never prints the flag package's bare "value".
func TestFlagsNameTheirValue(t *testing.T) {
	t.Parallel()
	for cmd, fs := range commandFlags() {
		fs.VisitAll(func(f *flag.Flag) {
			if name, _ := flag.UnquoteUsage(f); name == "value" {
				t.Errorf("headgate %s -%s: its help says \"-%s value\"; name the value in its usage", cmd.name, f.Name, f.Name)
			}
		})
	}
}
