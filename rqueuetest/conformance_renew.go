package rqueuetest

import (
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
}
