package headgate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// TestEditRunningJobSaysHow: an edit of a running job is refused with *JobRunningError,
// whose message does not tell the operator to cancel it first (a cancelled job is
// finished and no longer takes an edit) but to edit it once its attempt ends, or to
// cancel it and retry it with the edit; a delete's still says to cancel it first.
func TestEditRunningJobSaysHow(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, must := frozenStore(t, rdb)
		_, err := s.Enqueue(ctx, Envelope{ID: "j", Kind: "k"})
		must(err)
		claims, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{QueueDefault}, Capacity: 1, Lease: time.Hour})
		must(err)
		if len(claims) != 1 {
			t.Fatalf("admitted %d jobs, want 1", len(claims))
		}
		p := int32(5)
		_, err = s.Edit(ctx, "j", JobEdit{Priority: &p})
		var running *JobRunningError
		const wantEdit = `headgate: job "j" is running; edit it once its attempt ends, or cancel it and retry it with the edit`
		if !errors.As(err, &running) || running.JobID != "j" || err.Error() != wantEdit {
			t.Errorf("Edit of a running job: %v, want *JobRunningError %q", err, wantEdit)
		}
		_, err = s.Delete(ctx, "j")
		if !errors.As(err, &running) || err.Error() != `headgate: job "j" is running; cancel it first` {
			t.Errorf("Delete of a running job: %v", err)
		}
		j, err := s.GetJob(ctx, "j")
		must(err)
		if j.State != StateRunning || j.Envelope.Priority != 0 {
			t.Errorf("after the refusals: %s, priority %d; want running, 0", j.State, j.Envelope.Priority)
		}
	})
}
