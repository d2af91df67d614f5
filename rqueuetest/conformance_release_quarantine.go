package rqueuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/redis/go-redis/v9"
)

// releaseQuarantineCases cover ReleaseQuarantine (lua/release_quarantine.lua): lifting a
// fingerprint's quarantine frees the siblings it held.
var releaseQuarantineCases = []conformanceCase{
	{"ReleaseQuarantine/HeldSiblingsReturn", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		quarantineWithSiblings(t, ctx, s, "b", "c")
		for _, id := range []string{"b", "c"} {
			if !getJob(t, ctx, s, id).Held {
				t.Errorf("setup: %s is not held", id)
			}
		}
		if n, err := s.ReleaseQuarantine(ctx, "poison"); err != nil || n != 2 {
			t.Errorf("release: %d, %v; want 2 siblings released", n, err)
		}
		if q, err := s.Quarantined(ctx); err != nil || len(q) != 0 {
			t.Errorf("after release: quarantined %+v, %v", q, err)
		}
		// The quarantined job stays for the operator; its siblings and new jobs of the
		// fingerprint are admitted again.
		wantState(t, ctx, s, "a", headgate.StateQuarantined)
		fresh := job("fresh")
		fresh.Fingerprint = "poison"
		mustEnqueue(t, ctx, s, fresh)
		got := ids(mustAdmit(t, ctx, s, admitReq("w", 10)))
		slices.Sort(got)
		if !slices.Equal(got, []string{"b", "c", "d", "fresh"}) {
			t.Errorf("admitted %v, want b, c, d and fresh", got)
		}
		// A fingerprint not quarantined has nothing to release.
		writesNothing(t, ctx, s, "a release of no quarantine", func() {
			for _, fp := range []string{"poison", "never"} {
				if n, err := s.ReleaseQuarantine(ctx, fp); err != nil || n != 0 {
					t.Errorf("release of %s: %d, %v; want 0", fp, n, err)
				}
			}
		})
	}},
	{"Corrupt/ReleaseQuarantine", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				quarantineWithSiblings(t, ctx, s, "b", "c")
			},
			keys: keysNamed("job:b", "job:c", "quarantine", "held:", "q:default:p:", "q:default:ring", "q:default:wake"),
			call: func(ctx context.Context, s *headgate.Store) error {
				_, err := s.ReleaseQuarantine(ctx, "poison")
				return err
			},
			mustPark: parksOn(loadJobNumbers...),
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
				q, err := s.Quarantined(ctx)
				if err != nil || len(q) != 0 {
					t.Errorf("after release: quarantined %+v, %v", q, err)
				}
				// Back in their partition (checkIndexed holds every available job not
				// held to be there), no longer held.
				for _, id := range []string{"b", "c"} {
					if "job:"+id == corrupted {
						continue
					}
					held, err := s.Client().HGet(ctx, nsKey(s, "job:"+id), "held").Result()
					if err != redis.Nil {
						t.Errorf("after release %s is still held (%q, %v)", id, held, err)
					}
				}
			},
		})
	}},
}

// quarantineWithSiblings crashes job "a" of fingerprint "poison" into quarantine while the
// siblings wait scheduled, then promotes them into the held set. Job "d" stays available,
// so the default queue's partition, ring and wake list exist.
func quarantineWithSiblings(t testing.TB, ctx context.Context, s *headgate.Store, siblings ...string) {
	t.Helper()
	a := job("a")
	a.Fingerprint = "poison"
	jobs := []headgate.Envelope{a}
	for _, id := range siblings {
		e := job(id)
		e.Fingerprint, e.ScheduledAt = "poison", epoch.Add(time.Hour)
		jobs = append(jobs, e)
	}
	mustEnqueue(t, ctx, s, jobs...)
	for crash := 1; crash <= headgate.CrashLimitDefault; crash++ {
		if c := admitOne(t, ctx, s); c.Envelope.ID != "a" {
			t.Fatalf("admitted %s, want a", c.Envelope.ID)
		}
		advance(t, ctx, s, time.Minute)
		if _, err := s.ReclaimExpired(ctx, 10); err != nil {
			t.Fatal(err)
		}
		advance(t, ctx, s, time.Minute) // past the crash backoff
		if _, _, err := s.PromoteDue(ctx, 10); err != nil {
			t.Fatal(err)
		}
	}
	advance(t, ctx, s, 2*time.Hour)
	if _, _, err := s.PromoteDue(ctx, 10); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, ctx, s, job("d"))
	if st := stateOf(t, ctx, s, "a"); st != headgate.StateQuarantined {
		t.Fatalf("setup: a is %s, want quarantined", st)
	}
}
