//go:build linux

package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/headgate/headgate"
)

// probe plays a stale holder, over and over, through the same faulty path as the workers:
// in a namespace of its own whose store clock it freezes and steps, it admits a job as
// holder A, lets A's lease lapse, has the job reclaimed and admitted again by holder B,
// then tries every fenced write as A (renew, progress, output, checkpoint, ack). Each
// must be refused; B's ack must still be accepted afterwards, which shows that no write
// of A's got through unseen (an accepted write whose reply was lost would have finished
// or changed the job under B).
type probe struct {
	run               *Run
	accepted, refused int
	details           []string // what was accepted
}

func (p *probe) accept(format string, args ...any) {
	p.accepted++
	d := "probe: " + fmt.Sprintf(format, args...)
	p.run.logf("%s", d)
	if len(p.details) < 10 {
		p.details = append(p.details, d)
	}
}

const (
	// probeLease is the probe's lease, on its frozen clock.
	probeLease = time.Minute
	probeEvery = 100 * time.Millisecond
)

func (p *probe) loop(ctx context.Context) {
	rdb := p.run.target.Conn.Client()
	defer rdb.Close()
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: p.run.namespace + "-probe",
		CrashLimit: 1000, CrashRetryBase: time.Millisecond})
	if err != nil {
		p.run.fail(err)
		return
	}
	if !retry(ctx, func() error { return store.FreezeClock(ctx, time.Unix(1_000_000_000, 0)) }) {
		return
	}
	// A round every probeEvery keeps the probe's own load small next to the workers'.
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for n := 0; ctx.Err() == nil; n++ {
		if err := p.round(ctx, store, n); err != nil && ctx.Err() == nil {
			p.run.fail(err)
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
}

func (p *probe) round(ctx context.Context, store *headgate.Store, n int) error {
	id := fmt.Sprintf("probe-%06d", n)
	if !retry(ctx, func() error {
		_, err := store.Enqueue(ctx, headgate.Envelope{ID: id, Kind: "probe", Queue: "probe", Retention: time.Hour})
		return err
	}) {
		return nil
	}
	a, ok := admitAs(ctx, store, id, "holder-a", fmt.Sprintf("a-%d", n))
	if !ok {
		return nil
	}
	steps := []func() error{
		func() error { return store.AdvanceClock(ctx, 2*probeLease) },
		func() error { _, err := store.ReclaimExpired(ctx, 100); return err },
		func() error { return store.AdvanceClock(ctx, 2*time.Hour) }, // past any crash backoff
		func() error { _, _, err := store.PromoteDue(ctx, 100); return err },
	}
	for _, s := range steps {
		if !retry(ctx, s) {
			return nil
		}
	}
	b, ok := admitAs(ctx, store, id, "holder-b", fmt.Sprintf("b-%d", n))
	if !ok {
		return nil
	}
	if b.Fence <= a.Fence {
		return fmt.Errorf("probe %s: second admission has fence %d, not above the first's %d", id, b.Fence, a.Fence)
	}
	stale := []func() (bool, error){
		func() (bool, error) {
			lost, err := store.Renew(ctx, []headgate.LeaseRef{a}, probeLease)
			return err == nil && !slices.Contains(lost, id), err
		},
		func() (bool, error) {
			_, err := store.WriteProgress(ctx, a, headgate.Progress{Current: 1, Total: 2, Message: "stale"})
			return err == nil, err
		},
		func() (bool, error) {
			_, err := store.WriteOutput(ctx, a, headgate.Blob{SchemaVersion: 1, Bytes: []byte("stale")})
			return err == nil, err
		},
		func() (bool, error) {
			err := store.Checkpoint(ctx, a, headgate.Checkpoint{InProgress: "stale"})
			return err == nil, err
		},
		func() (bool, error) {
			_, err := store.Ack(ctx, a, headgate.OutcomeSuccess, &headgate.AckOpts{Result: &headgate.Blob{SchemaVersion: 1, Bytes: []byte(resultA)}})
			return err == nil, err
		},
	}
	names := []string{"renew", "progress", "output", "checkpoint", "ack"}
	for i, w := range stale {
		for try := 1; ; try++ {
			accepted, err := w()
			var lr *headgate.LeaseRejectedError
			if err == nil || errors.As(err, &lr) {
				if accepted {
					p.accept("%s %s by A (fence %d) accepted after B (fence %d) took the job, on try %d", names[i], id, a.Fence, b.Fence, try)
				} else {
					p.refused++
				}
				break
			}
			if !pause(ctx, 20*time.Millisecond) {
				return nil
			}
		}
	}
	// B still holds the job: its ack goes through, unless a write of A's did. Its ack may
	// be applied and its reply lost, and then retried (by go-redis itself, or here) and
	// refused: the job's result tells whose ack completed it.
	for {
		_, err := store.Ack(ctx, b, headgate.OutcomeSuccess, &headgate.AckOpts{Result: &headgate.Blob{SchemaVersion: 1, Bytes: []byte(resultB)}})
		var lr *headgate.LeaseRejectedError
		if err == nil {
			break
		}
		if errors.As(err, &lr) {
			res, rerr := store.JobResult(ctx, id)
			if rerr == nil && res == nil && jobGone(ctx, store, id) {
				// The job itself is gone: a failover to a replica that had not received
				// its writes lost them (Redis replicates asynchronously). A stale write
				// of A's cannot delete it (its ack keeps the job an hour), so this is no
				// stale write: the round ends with nothing to judge.
				p.run.logf("probe: %s gone after B's admission (a failover lost its writes); round skipped", id)
				return nil
			}
			if rerr != nil || res == nil || string(res.Bytes) != resultB {
				p.accept("B's ack of %s (fence %d) refused, and B's result is not the job's: %s", id, b.Fence, p.describe(ctx, store, id))
				return nil
			}
			break
		}
		if !pause(ctx, 20*time.Millisecond) {
			return nil
		}
	}
	// A's progress and output, had one been accepted unseen, would carry A's fence.
	for _, get := range []func() (int64, error){
		func() (int64, error) {
			pr, err := store.JobProgress(ctx, id)
			if pr == nil {
				return 0, err
			}
			return pr.Fence, err
		},
		func() (int64, error) {
			out, err := store.JobOutput(ctx, id)
			if out == nil {
				return 0, err
			}
			return out.Fence, err
		},
	} {
		var fence int64
		if !retry(ctx, func() (err error) { fence, err = get(); return err }) {
			return nil
		}
		if fence == a.Fence {
			p.accept("progress or output of %s by A (fence %d) found after B's ack", id, a.Fence)
		}
	}
	return nil
}

// The results the probe's holders ack with, to tell whose ack completed a job.
const (
	resultA = "stale holder A"
	resultB = "holder B"
)

// describe renders the job's state for a report.
func (p *probe) describe(ctx context.Context, store *headgate.Store, id string) string {
	j, err := store.GetJob(ctx, id)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("job is %s, fence %d, lease %q", j.State, j.Fence, j.LeaseID)
}

// admitAs admits job id as worker with leaseID, retrying through failures; an admission
// whose reply was lost is recognised by its lease id in the job.
func admitAs(ctx context.Context, store *headgate.Store, id, worker, leaseID string) (headgate.LeaseRef, bool) {
	for {
		claims, err := store.Admit(ctx, headgate.AdmitRequest{Worker: worker, LeaseID: leaseID, Queues: []string{"probe"},
			Capacity: 1, Lease: probeLease})
		if err == nil {
			for _, c := range claims {
				if c.Envelope.ID == id {
					return c.LeaseRef(), true
				}
			}
		}
		j, gerr := store.GetJob(ctx, id)
		if gerr == nil && j.State == headgate.StateRunning && j.LeaseID == leaseID {
			return headgate.LeaseRef{JobID: id, LeaseID: leaseID, Fence: j.Fence}, true
		}
		if !pause(ctx, 20*time.Millisecond) {
			return headgate.LeaseRef{}, false
		}
	}
}

// retry calls f until it succeeds or ctx ends, and reports whether it succeeded.
func retry(ctx context.Context, f func() error) bool {
	backoff := 5 * time.Millisecond
	for {
		if f() == nil {
			return true
		}
		if !pause(ctx, backoff) {
			return false
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// jobGone says whether the store has no job id (read without an error).
func jobGone(ctx context.Context, store *headgate.Store, id string) bool {
	_, err := store.GetJob(ctx, id)
	return errors.Is(err, headgate.ErrJobNotFound)
}
