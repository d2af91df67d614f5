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
// naming it, and nothing is written.
func (i *Inspector) SetPolicy(ctx context.Context, p *Policy) error {
	return i.store.SetPolicy(ctx, p)
}
