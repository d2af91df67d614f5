package rqueuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// renewCases cover the Renew transition of the job contract.
var renewCases = []conformanceCase{
	{"Renew/ExtendsHeldReportsLost", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"), job("b"))
		claims := mustAdmit(t, ctx, s, admitReq("w", 2))
		mustCancel(t, ctx, s, "b")
		advance(t, ctx, s, 30*time.Second)
		lost, err := s.Renew(ctx, []headgate.LeaseRef{claims[0].LeaseRef(), claims[1].LeaseRef()}, time.Minute)
		if err != nil || !slices.Equal(lost, []string{"b"}) {
			t.Errorf("renew: lost %v, %v; want [b]", lost, err)
		}
		advance(t, ctx, s, 45*time.Second) // past the first lease, inside the renewed one
		if r, err := s.ReclaimExpired(ctx, 10); err != nil || len(r) != 0 {
			t.Errorf("reclaimed a renewed lease: %+v (err %v)", r, err)
		}
		if j := getJob(t, ctx, s, "a"); !j.LeaseExpiresAt.Equal(epoch.Add(90 * time.Second)) {
			t.Errorf("renewed lease expires %v", j.LeaseExpiresAt)
		}
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
	{"Renew/KeepsTheAdmissionRecord", func(t *testing.T, s *headgate.Store) {
		// The record that recognises a repeat lives as long as the leases it names: a
		// renewal extends it, so a deleting ack repeated after it is still known.
		ctx := freeze(t, s)
		zero := job("zero")
		zero.Retention = 0
		mustEnqueue(t, ctx, s, zero)
		req := admitReq("w1", 1)
		req.Lease = time.Second
		claims := mustAdmitAs(t, ctx, s, req)
		if len(claims) != 1 {
			t.Fatalf("admitted %v", claimSummary(claims))
		}
		record := nsKey(s, "admission:"+req.LeaseID)
		if ttl, err := s.Client().PTTL(ctx, record).Result(); err != nil || ttl <= 0 || ttl > time.Second {
			t.Fatalf("the admission record's TTL %s, %v; want at most the 1s lease", ttl, err)
		}
		if lost, err := s.Renew(ctx, []headgate.LeaseRef{claims[0].LeaseRef()}, time.Hour); err != nil || len(lost) != 0 {
			t.Fatalf("renew: lost %v, %v", lost, err)
		}
		if ttl, err := s.Client().PTTL(ctx, record).Result(); err != nil || ttl < 30*time.Minute {
			t.Errorf("after a renewal of an hour the record's TTL is %s, %v; want about an hour", ttl, err)
		}
		mustAck(t, ctx, s, claims[0], headgate.OutcomeSuccess, nil)
		if st, err := s.Ack(ctx, claims[0].LeaseRef(), headgate.OutcomeSuccess, nil); err != nil {
			t.Errorf("repeated deleting ack after the renewal: %s, %v; want the first result", st, err)
		}
	}},
}
