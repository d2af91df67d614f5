package main

import (
	"flag"
	"time"

	"github.com/headgate/headgate/internal/humandur"
)

// durationValue is a flag.Value of a duration written as the command prints durations
// (7d, 3d4h: humandur) or in Go's notation (168h), so that a duration copied from a table
// (a tenant's OLDEST, a policy's retention) is taken as a flag.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := humandur.Parse(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }

// durationFlag defines a duration flag that takes the printed form too.
func durationFlag(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}
