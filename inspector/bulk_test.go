package inspector_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/redistest"
)

// TestBulkVerbs drives the bulk verbs through the inspector: a dry run counts and writes
// nothing, batches report progress, a run that moved jobs leaves one audit line, and a
// state the verb cannot select is refused before any call.
func TestBulkVerbs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var buf syncBuffer
	insp, err := inspector.New(redistest.Miniredis(t), &inspector.Config{Namespace: b.store.Namespace(),
		Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b.enqueue(t,
		headgate.Envelope{ID: "a1", PartitionKey: "acme"}, headgate.Envelope{ID: "a2", PartitionKey: "acme"},
		headgate.Envelope{ID: "a3", PartitionKey: "acme"},
		headgate.Envelope{ID: "g1", PartitionKey: "globex"}, headgate.Envelope{ID: "g2", PartitionKey: "globex"})
	acme := inspector.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Partition: "acme"}

	dry, err := insp.BulkCancel(b.ctx, acme, &inspector.BulkOptions{DryRun: true})
	if err != nil || dry.Moved != 3 || dry.Cursor != "" {
		t.Fatalf("dry run: %+v, %v; want 3 moved, no cursor", dry, err)
	}
	if s := b.stats(t, headgate.QueueDefault); s.Counts[headgate.StateAvailable] != 5 {
		t.Fatalf("after a dry run, counts %v; want 5 available", s.Counts)
	}
	if strings.Contains(buf.String(), "by filter") {
		t.Errorf("a dry run was logged: %s", buf.String())
	}

	var progress []inspector.BulkProgress
	res, err := insp.BulkCancel(b.ctx, acme, &inspector.BulkOptions{BatchSize: 2,
		Progress: func(p inspector.BulkProgress) { progress = append(progress, p) }})
	if err != nil || res.Moved != 3 || res.Batches != 2 {
		t.Fatalf("cancel acme: %+v, %v; want 3 moved in 2 batches", res, err)
	}
	if len(progress) != 2 || progress[0].Moved != 2 || progress[0].Cursor == "" || progress[1].Moved != 3 || progress[1].Cursor != "" {
		t.Errorf("progress %+v; want 2 then 3 moved, a cursor after the first batch only", progress)
	}
	if line := buf.String(); !strings.Contains(line, "jobs cancelled by filter") || !strings.Contains(line, "partition=acme") ||
		!strings.Contains(line, "jobs=3") {
		t.Errorf("audit line %q; want the verb, the partition and jobs=3", line)
	}

	res, err = insp.BulkRetry(b.ctx, inspector.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled}, nil)
	if err != nil || res.Moved != 3 {
		t.Fatalf("retry cancelled: %+v, %v; want 3", res, err)
	}
	res, err = insp.BulkDelete(b.ctx, inspector.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Partition: "globex"}, nil)
	if err != nil || res.Moved != 2 {
		t.Fatalf("purge globex: %+v, %v; want 2", res, err)
	}
	s := b.stats(t, headgate.QueueDefault)
	if s.Counts[headgate.StateAvailable] != 3 || s.Counts[headgate.StateCancelled] != 0 {
		t.Errorf("counts %v; want acme's 3 available again, globex gone", s.Counts)
	}
	for _, id := range []string{"g1", "g2"} {
		if _, err := b.insp.Job(b.ctx, id); !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("job %s after the purge: %v; want ErrJobNotFound", id, err)
		}
	}

	_, err = insp.BulkRetry(b.ctx, inspector.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateRunning}, nil)
	if ie := (*headgate.InvalidError)(nil); !errors.As(err, &ie) || ie.Field != "State" {
		t.Errorf("retry of running jobs: %v; want *InvalidError on State", err)
	}
}
