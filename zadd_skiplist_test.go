package headgate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// TestRunningSetsStaySkiplists checks zadd_skiplist (lua/lib.lua): the leases and the
// running jobs' index of a kind are skiplists on a real server from their first
// admission, and the member that converts them is never left in them, so no reader sees
// it and an emptied set is deleted. miniredis has no encodings: there only the members
// are checked.
func TestRunningSetsStaySkiplists(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, must := frozenStore(t, rdb)
		ctx := context.Background()
		var ids []string
		for i := range 3 {
			id := fmt.Sprint("j", i)
			ids = append(ids, id)
			_, err := s.Enqueue(ctx, Envelope{ID: id, Kind: "k", Payload: []byte("{}")})
			must(err)
		}
		claims, err := s.Admit(ctx, AdmitRequest{LeaseID: "l1", Queues: []string{QueueDefault}, Capacity: 2, Lease: time.Minute})
		must(err)
		if len(claims) != 2 {
			t.Fatalf("admitted %d jobs, want 2", len(claims))
		}
		k := s.keys
		leases, running := k.Leases(), k.JobIndex(QueueDefault, StateRunning, "k")
		for _, key := range []string{leases, running} {
			members, err := rdb.ZRange(ctx, key, 0, -1).Result()
			must(err)
			if !slices.Equal(members, ids[:2]) {
				for i, m := range members {
					if len(m) > 16 {
						members[i] = fmt.Sprintf("%.16q... (%d bytes)", m, len(m))
					}
				}
				t.Errorf("%s holds %q, want %q", key, members, ids[:2])
			}
			if strings.HasSuffix(t.Name(), "/miniredis") {
				continue
			}
			enc, err := rdb.ObjectEncoding(ctx, key).Result()
			must(err)
			if enc != "skiplist" {
				t.Errorf("%s is a %s, want a skiplist", key, enc)
			}
		}
		var acks []AckRequest
		for _, c := range claims {
			acks = append(acks, AckRequest{Lease: c.LeaseRef(), Outcome: OutcomeSuccess})
		}
		res, err := s.AckMany(ctx, acks)
		must(err)
		for _, r := range res {
			must(r.Err)
		}
		for _, key := range []string{leases, running} {
			n, err := rdb.Exists(ctx, key).Result()
			must(err)
			if n != 0 {
				t.Errorf("%s is left after its last member was acked", key)
			}
		}
	})
}
