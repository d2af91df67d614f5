package inspector_test

import (
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

func TestWhy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.insp.Why(b.ctx, "nope", nil); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Errorf("Why of an unknown id: %v, want ErrJobNotFound", err)
	}
	b.enqueue(t, headgate.Envelope{ID: "a", Queue: "mail"}, headgate.Envelope{ID: "b", Queue: "mail"},
		headgate.Envelope{ID: "c", Queue: "mail", ScheduledAt: epoch.Add(90 * time.Second)})
	if err := b.insp.Pause(b.ctx, "mail"); err != nil {
		t.Fatal(err)
	}
	e, err := b.insp.Why(b.ctx, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `job b is available:
  - its queue mail is paused
  - no live worker serves its queue mail
  - its partition's turn: 1 job ahead in the ring at quantum 1 (1 in its own partition, 0 partitions before it in turn order, 1 round to go)
`
	if got := e.String(); got != want {
		t.Errorf("explanation:\n%s\nwant:\n%s", got, want)
	}
	e, err = b.insp.Why(b.ctx, "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	want = `job c is scheduled:
  - scheduled at 2030-01-02T03:05:35.000Z (in 1m30s)
  - its queue mail is paused
  - no live worker serves its queue mail
`
	if got := e.String(); got != want {
		t.Errorf("explanation:\n%s\nwant:\n%s", got, want)
	}
}

func TestWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hb := headgate.Heartbeat{ID: "w1", Host: "h", PID: 7, Queues: []string{"mail"}, Kinds: []string{"send"},
		Concurrency: 2, Started: epoch, Liveness: 15 * time.Second}
	if _, err := b.store.Heartbeat(b.ctx, hb); err != nil {
		t.Fatal(err)
	}
	got, err := b.insp.Workers(b.ctx)
	if err != nil || len(got) != 1 || got[0].ID != "w1" || !got[0].Live || !got[0].LastSeen.Equal(epoch) {
		t.Fatalf("Workers: %+v, %v", got, err)
	}
	if err := b.store.AdvanceClock(b.ctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err = b.insp.Workers(b.ctx)
	if err != nil || len(got) != 1 || got[0].Live {
		t.Fatalf("Workers past the liveness window: %+v, %v; want w1 not live", got, err)
	}
	// A live worker is listed before the ones that are not, whatever its id.
	hb.ID = "w2"
	if _, err := b.store.Heartbeat(b.ctx, hb); err != nil {
		t.Fatal(err)
	}
	got, err = b.insp.Workers(b.ctx)
	if err != nil || len(got) != 2 || got[0].ID != "w2" || !got[0].Live || got[1].ID != "w1" || got[1].Live {
		t.Fatalf("Workers with w2 live and w1 not: %+v, %v; want w2 first", got, err)
	}
}
