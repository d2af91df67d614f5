package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// setPolicyCases cover the namespace policy: stored in Redis, applied by every store of
// the namespace whatever its own configuration, with the caller's defaults only for the
// fields the namespace does not store.
var setPolicyCases = []conformanceCase{
	{"SetPolicy/AppliedFleetWide", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		// Another process of the fleet, configured differently.
		other, err := headgate.NewStore(s.Client(), &headgate.StoreConfig{Namespace: s.Namespace(),
			RetryBase: 5 * time.Second, CrashLimit: 9, CrashRetryBase: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		retryDelay := func(st *headgate.Store, id string) time.Duration {
			t.Helper()
			mustEnqueue(t, ctx, s, job(id))
			c := admitOne(t, ctx, s)
			if _, err := st.Ack(ctx, c.LeaseRef(), headgate.OutcomeRetry, &headgate.AckOpts{Error: "x"}); err != nil {
				t.Fatal(err)
			}
			now, err := s.Now(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return getJob(t, ctx, s, id).ScheduledAt.Sub(now)
		}
		// Without a stored policy each caller's defaults apply, per call.
		if d := retryDelay(other, "a"); d != 5*time.Second {
			t.Errorf("retry backoff without a policy: %v, want the caller's 5s", d)
		}
		p, err := s.Policy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Stored) != 0 || p.RetryBase != headgate.RetryBaseDefault || p.RetentionArchived != headgate.RetentionFailedDefault {
			t.Errorf("policy of a namespace without one: %+v", p)
		}
		p.RetryBase, p.CrashLimit, p.CrashRetryBase = 3*time.Second, 1, time.Second
		if err := s.SetPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
		// Every store now applies the stored policy.
		if d := retryDelay(other, "b"); d != 3*time.Second {
			t.Errorf("retry backoff with a policy: %v, want the policy's 3s", d)
		}
		got, err := other.Policy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.RetryBase != 3*time.Second || got.CrashLimit != 1 || got.RetryCap != headgate.RetryCapDefault ||
			!slices.Equal(got.Stored, headgate.PolicyFields) {
			t.Errorf("policy read by another store: %+v", got)
		}
		// The crash limit and crash base are the policy's too: the first crash quarantines.
		mustEnqueue(t, ctx, s, job("c"))
		admitOne(t, ctx, s)
		advance(t, ctx, s, time.Minute)
		r, err := other.ReclaimExpired(ctx, 10)
		if err != nil || len(r) != 1 || !r[0].Quarantined {
			t.Errorf("reclaim under crash limit 1: %+v, %v; want c quarantined", r, err)
		}
	}},
	{"SetPolicy/InvalidWritesNothing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		base, err := s.Policy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			field string
			edit  func(p *headgate.Policy)
		}{
			{"Policy.RetryBase", func(p *headgate.Policy) { p.RetryBase = 0 }},
			{"Policy.RetryCap", func(p *headgate.Policy) { p.RetryCap = p.RetryBase - time.Millisecond }},
			{"Policy.CrashLimit", func(p *headgate.Policy) { p.CrashLimit = 0 }},
			{"Policy.CrashRetryBase", func(p *headgate.Policy) { p.CrashRetryBase = 2 * p.RetryCap }},
			{"Policy.RetentionCancelled", func(p *headgate.Policy) { p.RetentionCancelled = -time.Second }},
			{"Policy.SnoozeLimit", func(p *headgate.Policy) { p.SnoozeLimit = -1 }},
			{"Policy.FingerprintInflight", func(p *headgate.Policy) { p.FingerprintInflight = -1 }},
		} {
			p := *base
			c.edit(&p)
			err := unchanged(t, ctx, s, "set "+c.field, func() error { return s.SetPolicy(ctx, &p) })
			if e := wantErr[*headgate.InvalidError](t, err); e != nil && e.Field != c.field {
				t.Errorf("invalid policy names %q, want %q", e.Field, c.field)
			}
		}
	}},
}
