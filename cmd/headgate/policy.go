package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/humandur"
)

// policyJSON holds each invocation's -json flag of the policy command.
var policyJSON sync.Map // *cli -> *bool

func policyFlags(fs *flag.FlagSet, c *cli) {
	v := new(bool)
	fs.BoolVar(v, "json", false, "show: print the policy as JSON")
	policyJSON.Store(c, v)
}

// cmdPolicy shows the namespace policy, or sets fields of it: the fields not named keep
// the values shown, and every field is then stored in the namespace.
func cmdPolicy(ctx context.Context, c *cli, args []string) error {
	asJSON := false
	if v, ok := policyJSON.LoadAndDelete(c); ok {
		asJSON = *v.(*bool)
	}
	p, err := c.insp.Policy(ctx)
	if err != nil {
		return err
	}
	switch {
	case len(args) == 0 || len(args) == 1 && args[0] == "show":
	case args[0] == "set":
		pairs := args[1:]
		if len(pairs) == 0 || len(pairs)%2 != 0 {
			return usagef("set wants FIELD VALUE pairs (fields: %v)", headgate.PolicyFields)
		}
		for i := 0; i < len(pairs); i += 2 {
			if !slices.Contains(headgate.PolicyFields, pairs[i]) {
				return usagef("unknown policy field %q (fields: %v)", pairs[i], headgate.PolicyFields)
			}
			value := pairs[i+1]
			if cur, _ := p.Value(pairs[i]); !isCount(cur) {
				// A duration as the table prints it (7d, 3d4h) is taken back: Set takes
				// Go's notation only.
				if d, err := humandur.Parse(value); err == nil {
					value = d.String()
				}
			}
			if err := p.Set(pairs[i], value); err != nil {
				var inv *headgate.InvalidError
				if errors.As(err, &inv) { // named as typed: retry_base, not Policy.RetryBase
					return usagef("%s: %s", pairs[i], inv.Reason)
				}
				return err
			}
		}
		if err := c.insp.SetPolicy(ctx, p); err != nil {
			// A value out of range is a usage error naming the field as typed, with its range.
			var inv *headgate.InvalidError
			if name, ok := "", false; errors.As(err, &inv) {
				if name, ok = headgate.PolicyFieldName(inv.Field); ok {
					return usagef("%s: %s", name, inv.Reason)
				}
			}
			return err
		}
		if p, err = c.insp.Policy(ctx); err != nil {
			return err
		}
	default:
		return usagef("want show, or set FIELD VALUE...")
	}
	if asJSON {
		// Numbers, as in the other -json documents: a duration field as integer
		// milliseconds under its name with _ms (retry_base_ms), a count under its name.
		out := struct {
			Policy map[string]int64 `json:"policy"`
			Stored []string         `json:"stored"`
		}{Policy: map[string]int64{}, Stored: p.Stored}
		if out.Stored == nil {
			out.Stored = []string{}
		}
		for _, f := range headgate.PolicyFields {
			v, _ := p.Value(f)
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				out.Policy[f] = n
			} else if d, err := time.ParseDuration(v); err == nil {
				out.Policy[f+"_ms"] = d.Milliseconds()
			} else {
				return fmt.Errorf("policy field %s has value %q, neither a count nor a duration", f, v)
			}
		}
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := c.table()
	fmt.Fprintln(tw, "FIELD\tVALUE\tSOURCE")
	for _, f := range headgate.PolicyFields {
		v, _ := p.Value(f)
		src := "default"
		if slices.Contains(p.Stored, f) {
			src = "namespace"
		}
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			if d, err := time.ParseDuration(v); err == nil {
				v = humandur.String(d) // as every duration the command prints
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f, v, src)
	}
	return tw.Flush()
}

// isCount reports whether a policy field's value, as Policy.Value writes it, is a count
// rather than a duration.
func isCount(v string) bool {
	_, err := strconv.ParseInt(v, 10, 64)
	return err == nil
}
