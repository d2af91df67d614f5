package inspector

import (
	"context"

	"github.com/headgate/headgate"
)

// Policy is a namespace's fleet-wide policy: retry and crash backoff, crash limit,
// retention of failed jobs, snooze limit, per-fingerprint in-flight cap.
type Policy = headgate.Policy

// Policy returns the namespace's policy. Fields the namespace does not store (not listed
// in Policy.Stored) show the built-in defaults; a worker configured with other defaults
// applies its own for those fields until SetPolicy stores them.
func (i *Inspector) Policy(ctx context.Context) (*Policy, error) {
	return i.store.Policy(ctx)
}

// SetPolicy stores every field of p as the namespace's policy, applied by every worker of
// the namespace from its next call on. An out-of-range field is an *headgate.InvalidError
// naming it, and nothing is written. Each field whose value it changes is logged, old
// and new value; a write that changes no value logs nothing.
func (i *Inspector) SetPolicy(ctx context.Context, p *Policy) error {
	old, readErr := i.store.Policy(ctx) // only for the audit lines, as audit.go's reads
	if err := i.store.SetPolicy(ctx, p); err != nil {
		return err
	}
	for _, f := range headgate.PolicyFields {
		v, _ := p.Value(f)
		was := "unknown" // the read failed: a line too many, never one missing
		if readErr == nil {
			was, _ = old.Value(f)
		}
		i.auditChange(v != was, nil, "policy field set", "field", f, "old", was, "new", v)
	}
	return nil
}
