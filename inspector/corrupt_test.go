package inspector_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// TestCorruptJobs: a job whose stored data cannot be used is parked by the transition
// that finds it, and the inspector lists it with the reason.
func TestCorruptJobs(t *testing.T) {
	b := setup(t)
	at := epoch.Add(time.Second)
	b.enqueue(t, headgate.Envelope{ID: "bad", ScheduledAt: at}, headgate.Envelope{ID: "good", ScheduledAt: at})
	if err := b.store.Client().HSet(b.ctx, "hg:{"+b.store.Namespace()+"}:job:bad", "sched", "soon").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := b.insp.CorruptJobs(b.ctx); err != nil || len(got) != 0 {
		t.Fatalf("before: corrupt jobs %v, %v", got, err)
	}
	if err := b.store.AdvanceClock(b.ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.store.PromoteDue(b.ctx, 10); err != nil {
		t.Fatalf("promote: %v", err)
	}
	got, err := b.insp.CorruptJobs(b.ctx)
	if err != nil || !slices.Equal(slices.Collect(maps.Keys(got)), []string{"bad"}) || !strings.Contains(got["bad"], "sched") {
		t.Errorf("corrupt jobs %v, %v; want bad, for its sched", got, err)
	}
	if j, err := b.insp.Job(b.ctx, "good"); err != nil || j.Job.State != headgate.StateAvailable {
		t.Errorf("good job: %+v, %v; want it promoted", j, err)
	}
}
