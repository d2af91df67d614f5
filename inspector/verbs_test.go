package inspector_test

import (
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

// TestVerbs drives retry, edit, delete and release-and-retry through the inspector.
func TestVerbs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "a", Fingerprint: "fp", Retention: time.Hour}, headgate.Envelope{ID: "b"})
	if err := b.insp.Cancel(b.ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.insp.Edit(b.ctx, "b", inspector.JobEdit{Priority: new(int32(2))}); !errors.As(err, new(*headgate.NotEditableError)) {
		t.Errorf("edit of a cancelled job: %v, want *NotEditableError", err)
	}
	r, err := b.insp.Retry(b.ctx, "b", &inspector.RetryOptions{Edit: &inspector.JobEdit{Priority: new(int32(2))}})
	if err != nil || r.State != headgate.StateAvailable {
		t.Fatalf("retry b: %+v, %v", r, err)
	}
	if _, err := b.insp.Edit(b.ctx, "a", inspector.JobEdit{Priority: new(int32(5))}); err != nil {
		t.Fatal(err)
	}
	// a (priority 5) runs first; its lost lease quarantines it (crash limit 1).
	if c := b.admit(t, headgate.QueueDefault, 1); len(c) != 1 || c[0].Envelope.ID != "a" {
		t.Fatalf("admitted %+v, want a", c)
	}
	if err := b.store.AdvanceClock(b.ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.ReclaimExpired(b.ctx, 10); err != nil {
		t.Fatal(err)
	}
	r, err = b.insp.ReleaseQuarantineAndRetry(b.ctx, "fp")
	if err != nil || r.State != headgate.StateAvailable || !r.Lifted {
		t.Fatalf("release and retry: %+v, %v", r, err)
	}
	if q, err := b.insp.Quarantined(b.ctx); err != nil || len(q) != 0 {
		t.Errorf("quarantined after release: %+v, %v", q, err)
	}
	if st, err := b.insp.Delete(b.ctx, "a"); err != nil || st != headgate.StateAvailable {
		t.Errorf("delete a: %s, %v", st, err)
	}
	if _, err := b.insp.Delete(b.ctx, "a"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Errorf("second delete: %v, want ErrJobNotFound", err)
	}
	if s := b.stats(t, headgate.QueueDefault); s.Counts[headgate.StateAvailable] != 1 || s.Counts[headgate.StateQuarantined] != 0 {
		t.Errorf("counts %v, want b alone available", s.Counts)
	}
}
