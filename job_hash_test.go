package headgate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// A new job's hash leaves out "queue" for the default queue and "created" while it
// equals "sched" (new_job_fields in lua/lib.lua: fewer bytes per queued job); both read
// back as before, an id replay still compares the queue, and every transition that
// reschedules a job keeps its creation time.
func TestJobHashLeavesOutDefaults(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, must := frozenStore(t, rdb)
		t0 := frozenEpoch
		later := t0.Add(time.Hour)
		envs := []Envelope{
			{ID: "acked", Kind: "k"},
			{ID: "other", Kind: "k", Queue: "q2"},
			{ID: "later", Kind: "k", ScheduledAt: later},
			{ID: "pending", Kind: "k", Pending: true},
			{ID: "edited", Kind: "k"},
			{ID: "operator", Kind: "k"},
			{ID: "bulk", Kind: "k", Queue: "q3"},
		}
		if _, err := s.Enqueue(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		fields := func(id string) map[string]string {
			t.Helper()
			h, err := rdb.HGetAll(ctx, s.keys.Job(id)).Result()
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		for id, want := range map[string]struct{ queue, created bool }{
			"acked": {false, false}, "other": {true, false}, "later": {false, true},
		} {
			h := fields(id)
			if _, ok := h["queue"]; ok != want.queue {
				t.Errorf("%s: hash has queue %v, want %v (%v)", id, ok, want.queue, h)
			}
			if _, ok := h["created"]; ok != want.created {
				t.Errorf("%s: hash has created %v, want %v (%v)", id, ok, want.created, h)
			}
		}
		created := func(id string, wantQueue string) {
			t.Helper()
			j, err := s.GetJob(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !j.CreatedAt.Equal(t0) {
				t.Errorf("%s (%s): CreatedAt %s, want %s", id, j.State, j.CreatedAt, t0)
			}
			if j.Queue != wantQueue {
				t.Errorf("%s: Queue %q, want %q", id, j.Queue, wantQueue)
			}
		}
		created("acked", QueueDefault)
		created("other", "q2")
		created("later", QueueDefault)
		if j, err := s.GetJob(ctx, "later"); err != nil || !j.ScheduledAt.Equal(later) {
			t.Fatalf("later: %v, %v; want scheduled at %s", j, err, later)
		}

		// A replay compares the stored queue, absent or not.
		res, err := s.Enqueue(ctx, Envelope{ID: "acked", Kind: "k"}, Envelope{ID: "other", Kind: "k", Queue: "q2"})
		if err != nil || !res[0].Replayed || !res[1].Replayed {
			t.Fatalf("replays: %+v, %v; want both replayed", res, err)
		}
		var conflict *IDConflictError
		if _, err := s.Enqueue(ctx, Envelope{ID: "acked", Kind: "k", Queue: "q2"}); !errors.As(err, &conflict) {
			t.Fatalf("same id on another queue: %v, want IDConflictError", err)
		}
		if _, err := s.Enqueue(ctx, Envelope{ID: "other", Kind: "k"}); !errors.As(err, &conflict) {
			t.Fatalf("same id on the default queue: %v, want IDConflictError", err)
		}

		// Every rescheduling keeps the creation time: an ack's retry (and the promotion
		// after it), an edit of an available and of a pending job, an operator's retry, a
		// bulk retry.
		must(s.AdvanceClock(ctx, time.Minute))
		claims, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{QueueDefault}, Capacity: 1, Lease: time.Minute})
		if err != nil || len(claims) != 1 || claims[0].Envelope.ID != "acked" {
			t.Fatalf("admit: %v, %v; want retried", claims, err)
		}
		if st, err := s.Ack(ctx, claims[0].LeaseRef(), OutcomeRetry, &AckOpts{Delay: time.Second}); err != nil || st != StateRetryable {
			t.Fatalf("ack retry: %s, %v", st, err)
		}
		created("acked", QueueDefault)
		must(s.AdvanceClock(ctx, time.Minute))
		if n, _, err := s.PromoteDue(ctx, 10); err != nil || n != 1 {
			t.Fatalf("promote: %d, %v; want 1", n, err)
		}
		created("acked", QueueDefault)
		at := t0.Add(2 * time.Hour)
		for _, id := range []string{"edited", "pending"} {
			if _, err := s.Edit(ctx, id, JobEdit{ScheduledAt: &at}); err != nil {
				t.Fatal(err)
			}
			created(id, QueueDefault)
		}
		for _, id := range []string{"operator", "bulk"} {
			must(s.Cancel(ctx, id))
		}
		must(s.AdvanceClock(ctx, time.Minute))
		if _, err := s.Retry(ctx, "operator", nil); err != nil {
			t.Fatal(err)
		}
		created("operator", QueueDefault)
		if r, err := s.BulkRetry(ctx, JobFilter{Queue: "q3", State: StateCancelled}, nil); err != nil || r.Moved != 1 {
			t.Fatalf("bulk retry: %+v, %v; want 1 moved", r, err)
		}
		created("bulk", "q3")
	})
}
