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
			_, err := store.Ack(ctx, a, headgate.OutcomeSuccess, nil)
			return err == nil, err
		},
	}
	for _, w := range stale {
		for {
			accepted, err := w()
			var lr *headgate.LeaseRejectedError
			if err == nil || errors.As(err, &lr) {
				if accepted {
					p.accepted++
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
	// B still holds the job: its ack goes through, unless a write of A's did.
	ambiguous := false // an earlier ack of B's failed in transit and may have been applied
	for {
		_, err := store.Ack(ctx, b, headgate.OutcomeSuccess, nil)
		var lr *headgate.LeaseRejectedError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &lr) && !ambiguous:
			p.accepted++ // something of A's finished or took the job
			return nil
		case errors.As(err, &lr):
			// B's own earlier ack may have completed the job; then only A's progress
			// could show a stale write.
			j, gerr := store.GetJob(ctx, id)
			if gerr != nil || j.State != headgate.StateCompleted {
				p.accepted++
				return nil
			}
			if prog, perr := store.JobProgress(ctx, id); perr == nil && prog != nil && prog.Fence == a.Fence {
				p.accepted++
			}
			return nil
		}
		ambiguous = true
		if !pause(ctx, 20*time.Millisecond) {
			return nil
		}
	}
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
