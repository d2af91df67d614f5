package rqueuetest

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/redis/go-redis/v9"
)

// corruptSmallCases corrupt each key that renew, checkpoint, promote, release_pending,
// release_quarantine, write_output, write_progress, claim_duty, release_duty and
// set_rate_limit read, and hold each call to the corruption harness (corrupt.go): it
// fails having written nothing, or it parks the corrupt job and moves the others.
var corruptSmallCases = []conformanceCase{
	{"Corrupt/Promote", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				a, b, c := job("a"), job("b"), job("c")
				b.PartitionKey, c.StickyWorker = "t1", "w9"
				for _, e := range []*headgate.Envelope{&a, &b, &c} {
					e.ScheduledAt = epoch.Add(time.Second)
				}
				// d and e are available already, so their partitions, rings and the
				// wake list exist to be corrupted.
				d, e := job("d"), job("e")
				d.PartitionKey, e.StickyWorker = "t1", "w9"
				later := job("later")
				later.ScheduledAt = epoch.Add(time.Hour)
				mustEnqueue(t, ctx, s, a, b, c, d, e, later)
				advance(t, ctx, s, time.Second)
			},
			keys: func(name string) bool {
				return keysNamed("job:a", "job:b", "job:c", "scheduled", "q:")(name)
			},
			call: func(ctx context.Context, s *headgate.Store) error {
				_, _, err := s.PromoteDue(ctx, 10)
				return err
			},
			mustPark:   parksOn(loadJobNumbers...),
			progressed: othersIn(headgate.StateAvailable, "a", "b", "c"),
		})
	}},
	{"Corrupt/ReleasePending", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				a, b, c := job("a"), job("b"), job("c")
				a.Pending, b.Pending, c.Pending = true, true, true
				b.ScheduledAt = epoch.Add(time.Hour)
				c.PartitionKey = "t1"
				d, later := job("d"), job("later")
				d.PartitionKey = "t1"
				later.ScheduledAt = epoch.Add(time.Hour)
				mustEnqueue(t, ctx, s, a, b, c, d, later)
			},
			keys: keysNamed("job:a", "job:b", "job:c", "scheduled", "q:"),
			call: func(ctx context.Context, s *headgate.Store) error {
				_, err := s.ReleasePending(ctx, "a", "b", "c")
				return err
			},
			mustPark: parksOn(loadJobNumbers...),
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
				want := map[string]headgate.State{"a": headgate.StateAvailable, "b": headgate.StateScheduled, "c": headgate.StateAvailable}
				for id, st := range want {
					if "job:"+id != corrupted {
						wantState(t, ctx, s, id, st)
					}
				}
			},
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
	{"Corrupt/Renew", func(t *testing.T, s *headgate.Store) {
		var leases []headgate.LeaseRef
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustEnqueue(t, ctx, s, job("a"), job("b"), job("c"))
				leases = nil
				for _, c := range mustAdmit(t, ctx, s, admitReq("w", 3)) {
					leases = append(leases, c.LeaseRef())
				}
				advance(t, ctx, s, 30*time.Second)
			},
			keys: keysNamed("job:", "leases"),
			call: func(ctx context.Context, s *headgate.Store) error {
				_, err := s.Renew(ctx, leases, time.Minute)
				return err
			},
			mustPark: parksOn("fence"),
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
				for _, l := range leases {
					if "job:"+l.JobID == corrupted {
						continue
					}
					if j := getJob(t, ctx, s, l.JobID); !j.LeaseExpiresAt.Equal(epoch.Add(90 * time.Second)) {
						t.Errorf("lease of %s expires %v, want it renewed", l.JobID, j.LeaseExpiresAt)
					}
				}
			},
		})
	}},
	{"Corrupt/Checkpoint", holderCallCorrupt(func(ctx context.Context, s *headgate.Store, l headgate.LeaseRef) error {
		return s.Checkpoint(ctx, l, headgate.Checkpoint{InProgress: "b", Done: []string{"a"}})
	})},
	{"Corrupt/WriteOutput", holderCallCorrupt(func(ctx context.Context, s *headgate.Store, l headgate.LeaseRef) error {
		_, err := s.WriteOutput(ctx, l, headgate.Blob{SchemaVersion: 1, Bytes: []byte("o")})
		return err
	})},
	{"Corrupt/WriteProgress", holderCallCorrupt(func(ctx context.Context, s *headgate.Store, l headgate.LeaseRef) error {
		_, err := s.WriteProgress(ctx, l, headgate.Progress{Current: 2, Total: 3, Message: "m"})
		return err
	})},
	{"Corrupt/ClaimDuty", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustClaimDuty(t, ctx, s, "a")
				advance(t, ctx, s, 10*time.Second)
			},
			keys: keysNamed("duty:"),
			call: func(ctx context.Context, s *headgate.Store) error {
				_, err := s.ClaimDuty(ctx, "reclaim", "b", 10*time.Second)
				return err
			},
			// A corrupt duty lease holds nobody: b takes it.
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, _ string) {
				if ok, err := s.ClaimDuty(ctx, "reclaim", "c", 10*time.Second); err != nil || ok {
					t.Errorf("after b's claim, c claimed the duty: %v, %v", ok, err)
				}
			},
		})
	}},
	{"Corrupt/ReleaseDuty", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustClaimDuty(t, ctx, s, "a")
			},
			keys: keysNamed("duty:"),
			call: func(ctx context.Context, s *headgate.Store) error { return s.ReleaseDuty(ctx, "reclaim", "a") },
		})
	}},
	{"Corrupt/SetRateLimit", func(t *testing.T, s *headgate.Store) {
		rl := headgate.RateLimit{Limit: 5, Window: time.Minute, Burst: 7}
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustSetRateLimit(t, ctx, s, "api", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 1})
			},
			keys: keysNamed("rate:"),
			call: func(ctx context.Context, s *headgate.Store) error { return s.SetRateLimit(ctx, "api", rl) },
			// The call rewrites the whole bucket, so it repairs any corruption of it.
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, _ string) {
				got, err := s.Client().HGetAll(ctx, nsKey(s, "rate:api")).Result()
				want := map[string]string{"tokens": "7", "burst": "7", "limit": "5", "window": "60000",
					"refilled": strconv.FormatInt(epoch.UnixMilli(), 10)}
				if err != nil || !maps.Equal(got, want) {
					t.Errorf("after set: bucket %v, %v; want %v", got, err, want)
				}
			},
		})
	}},
}

// parksOn is a mustPark for a call that reads the numeric job fields listed: a corrupt
// job hash, or one of those fields corrupted, must be parked.
func parksOn(fields ...string) func(string, string) bool {
	return func(_, field string) bool { return field == "" || slices.Contains(fields, field) }
}

// loadJobNumbers are the numeric fields of JOB_FIELDS in lua/lib.lua, which load_job reads.
var loadJobNumbers = []string{"prio", "sched", "ret", "uwin", "attempt", "maxa", "crash", "charge", "fence"}

// othersIn is a progressed check that each of ids but the corrupted job is in state.
func othersIn(state headgate.State, ids ...string) func(testing.TB, context.Context, *headgate.Store, string) {
	return func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
		for _, id := range ids {
			if "job:"+id != corrupted {
				wantState(t, ctx, s, id, state)
			}
		}
	}
}

// holderCallCorrupt checks a write of the holder of one running job (checkpoint, output,
// progress): a corrupt job hash, output or progress key refuses it with nothing written.
// An earlier output and progress exist, so their keys are corrupted too.
func holderCallCorrupt(call func(ctx context.Context, s *headgate.Store, l headgate.LeaseRef) error) func(*testing.T, *headgate.Store) {
	return func(t *testing.T, s *headgate.Store) {
		var lease headgate.LeaseRef
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustEnqueue(t, ctx, s, job("a"))
				c := admitOne(t, ctx, s)
				lease = c.LeaseRef()
				if _, err := s.WriteOutput(ctx, lease, headgate.Blob{SchemaVersion: 1, Bytes: []byte("first")}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.WriteProgress(ctx, lease, headgate.Progress{Current: 1, Total: 3}); err != nil {
					t.Fatal(err)
				}
				advance(t, ctx, s, time.Second)
			},
			keys: keysNamed("job:", "output:", "progress:"),
			call: func(ctx context.Context, s *headgate.Store) error { return call(ctx, s, lease) },
		})
	}
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

func mustClaimDuty(t testing.TB, ctx context.Context, s *headgate.Store, holder string) {
	t.Helper()
	if ok, err := s.ClaimDuty(ctx, "reclaim", holder, 10*time.Second); err != nil || !ok {
		t.Fatalf("claim duty for %s: %v, %v", holder, ok, err)
	}
}
