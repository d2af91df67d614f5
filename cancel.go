package headgate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Cancel moves an unfinished job to cancelled. A running holder's later ack is
// rejected, and the holder is told at once on CancelledChannel. Returns ErrJobNotFound
// or *NotCancellableError when it cannot, and *CorruptError, with nothing written, when a
// structure the cancel writes is corrupt. A job whose own stored data is corrupt cannot be
// moved; it is parked instead (listed by CorruptJobs with the reason, out of the lease and
// schedule indexes, never run again) and Cancel returns *JobParkedError, as Retry, Edit and
// Delete do: the job will not run, but it is not cancelled (it keeps its state, and Stats
// counts it there), which a caller that reports the cancel must not say it is.
func (s *Store) Cancel(ctx context.Context, id string) error {
	if err := validateRequired("id", id, true); err != nil {
		return err
	}
	reply, err := s.run(ctx, scriptCancel, id, id)
	if err != nil {
		return err
	}
	return parked(id, reply)
}

// CancelledChannel is the Redis pub/sub channel on which Cancel announces the lease of
// each running job it cancels; ParseCancelled reads a message. Workers subscribe to it
// so that a cancelled handler stops within a round trip. A message is a hint: a
// subscriber that was disconnected misses it and learns of the cancel at its next lease
// renewal. Publishes on a Redis Cluster reach subscribers on every node.
func (s *Store) CancelledChannel() string { return s.keys.Cancelled() }

// ParseCancelled decodes a message of CancelledChannel into the lease that was
// cancelled.
func ParseCancelled(msg string) (LeaseRef, error) {
	head, lease, ok := strings.Cut(msg, "\n")
	fence, id, ok2 := strings.Cut(head, " ")
	f, err := strconv.ParseInt(fence, 10, 64)
	if !ok || !ok2 || err != nil || id == "" {
		return LeaseRef{}, fmt.Errorf("headgate: malformed cancel message %q", truncateForMessage(msg))
	}
	return LeaseRef{JobID: id, LeaseID: lease, Fence: f}, nil
}

// truncateForMessage shortens text quoted in an error message to 200 bytes.
func truncateForMessage(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return s[:limit] + fmt.Sprintf("…(%d bytes)", len(s))
}
