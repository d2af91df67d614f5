package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// reclaimCases cover the Reclaim transition of the job contract.
var reclaimCases = []conformanceCase{
	{"Reclaim/CrashChargedToStepThenQuarantine", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e, sib := job("a"), job("sibling")
		e.Fingerprint, sib.Fingerprint = "poison", "poison"
		sib.ScheduledAt = epoch.Add(time.Hour)
		mustEnqueue(t, ctx, s, e, sib)
		for crash := 1; crash <= 3; crash++ {
			c := admitOne(t, ctx, s)
			if c.Envelope.ID != "a" {
				t.Fatalf("admitted %s, want a", c.Envelope.ID)
			}
			if err := s.Checkpoint(ctx, c.LeaseRef(), headgate.Checkpoint{InProgress: "charge", Done: []string{"load"}}); err != nil {
				t.Fatal(err)
			}
			advance(t, ctx, s, time.Minute)
			r, err := s.ReclaimExpired(ctx, 10)
			if err != nil || len(r) != 1 {
				t.Fatalf("reclaim: %+v, %v", r, err)
			}
			want := headgate.Reclaimed{JobID: "a", Fingerprint: "poison", CrashAttempt: crash, Quarantined: crash == 3}
			if r[0] != want {
				t.Errorf("reclaim %d: %+v, want %+v", crash, r[0], want)
			}
			j := getJob(t, ctx, s, "a")
			if j.Checkpoint.CrashesByStep["charge"] != crash || j.Attempt != 0 || !slices.Equal(j.Checkpoint.Done, []string{"load"}) {
				t.Errorf("after crash %d: checkpoint %+v attempt %d", crash, j.Checkpoint, j.Attempt)
			}
			if crash < 3 {
				// Retryable after backoff on the crash count: CrashRetryBase, then twice it,
				// each jittered by a factor in [0.5, 1.5).
				now, err := s.Now(ctx)
				if err != nil {
					t.Fatalf("now: %v", err)
				}
				backoff := headgate.CrashRetryBaseDefault << (crash - 1)
				if d := j.ScheduledAt.Sub(now); j.State != headgate.StateRetryable || d < backoff/2 || d >= backoff*3/2 {
					t.Errorf("after crash %d: %s in %v, want retryable in [%v, %v)", crash, j.State, d, backoff/2, backoff*3/2)
				}
				advance(t, ctx, s, backoff*3/2)
				mustPromote(t, ctx, s)
			}
		}
		wantState(t, ctx, s, "a", headgate.StateQuarantined)
		// The fingerprint blocks new enqueues and the admission of siblings.
		fresh := job("fresh")
		fresh.Fingerprint = "poison"
		err := unchanged(t, ctx, s, "enqueue quarantined", func() error { _, err := s.Enqueue(ctx, fresh); return err })
		if q := wantErr[*headgate.QuarantinedError](t, err); q != nil && q.Fingerprint != "poison" {
			t.Errorf("quarantined names %q", q.Fingerprint)
		}
		advance(t, ctx, s, 2*time.Hour)
		mustPromote(t, ctx, s)
		wantAdmitted(t, ctx, s, admitReq("w", 5), nil, " with its fingerprint quarantined")
		// Quarantined jobs are exempt from eviction.
		advance(t, ctx, s, 48*time.Hour)
		mustEvict(t, ctx, s)
		wantState(t, ctx, s, "a", headgate.StateQuarantined)
		q, err := s.Quarantined(ctx)
		if err != nil || len(q) != 1 || q[0] != (headgate.QuarantinedFingerprint{Fingerprint: "poison", JobID: "a", Held: 1}) {
			t.Errorf("quarantine list: %+v, %v", q, err)
		}
		if n, err := s.ReleaseQuarantine(ctx, "poison"); err != nil || n != 1 {
			t.Errorf("release: %d, %v; want 1 sibling released", n, err)
		}
		if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5))); !slices.Equal(got, []string{"sibling"}) {
			t.Errorf("after release admitted %v, want [sibling]", got)
		}
		mustEnqueue(t, ctx, s, fresh)
	}},
}
