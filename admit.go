package headgate

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// AdmitRequest asks for work for one worker.
type AdmitRequest struct {
	Worker string // worker id; it alone admits jobs pinned to it
	// LeaseID names this admission in the leases it grants, and must be unique to the
	// call: a second call with the same lease id, while the leases of the first last
	// unrenewed, is taken for a repeat of it (a client resending the call after losing
	// the reply) and returns the first call's jobs that are still running under it,
	// leasing no others.
	LeaseID  string
	Queues   []string      // served in this order
	Capacity int           // the most jobs to admit
	Lease    time.Duration // how long the leases last before renewal
	// Quantum is the round-robin credit, in weight units, a partition gets per turn.
	// Defaults to 1: one job of weight 1 per partition per turn.
	Quantum int
	// Probation limits the jobs that have crashed before (Envelope.CrashAttempt > 0) to
	// MaxCrashed in this call, so that a job which kills its worker crashes alone rather
	// than with the jobs admitted beside it. A crashed job over the limit is looked past
	// and waits for a call with a slot; it never blocks its partition. The worker passes
	// 1 less the crashed jobs it is running. Without Probation (the zero value, for
	// direct Store users) crashed jobs are admitted like any other.
	Probation  bool
	MaxCrashed int
}

// Admit leases up to req.Capacity available jobs to a worker, taking turns across
// partitions (see lua/admit.lua).
func (s *Store) Admit(ctx context.Context, req AdmitRequest) ([]Claim, error) {
	if err := validateName("Worker", req.Worker, false); err != nil {
		return nil, err
	}
	if err := validateRequired("LeaseID", req.LeaseID, true); err != nil {
		return nil, err
	}
	switch {
	case len(req.Queues) == 0:
		return nil, invalid("Queues", "is empty")
	case req.Capacity <= 0 || req.Capacity > MaxCapacity:
		return nil, invalid("Capacity", "is %d, outside 1..%d", req.Capacity, MaxCapacity)
	case req.Lease < time.Millisecond:
		return nil, invalid("Lease", "must be at least 1ms, not %s", req.Lease)
	case req.Quantum < 0 || req.Quantum > MaxWeight:
		return nil, invalid("Quantum", "is %d, outside 0..%d", req.Quantum, MaxWeight)
	case req.MaxCrashed < 0 || req.MaxCrashed > MaxCapacity:
		return nil, invalid("MaxCrashed", "is %d, outside 0..%d", req.MaxCrashed, MaxCapacity)
	}
	for i, q := range req.Queues {
		if err := validateRequired(fmt.Sprintf("Queues[%d]", i), q, false); err != nil {
			return nil, err
		}
	}
	budget := 4*req.Capacity + 64
	crashed := -1 // no limit
	if req.Probation {
		crashed = req.MaxCrashed
	}
	args := []any{req.Worker, req.LeaseID, req.Capacity, ms(req.Lease), cmp.Or(req.Quantum, 1), budget, crashed, len(req.Queues)}
	for _, q := range req.Queues {
		args = append(args, q)
	}
	reply, err := s.run(ctx, scriptAdmit, "", args...)
	if err != nil {
		return nil, err
	}
	// Four entries a job, flat: id, hash, fence, lease expiry (lua/admit.lua).
	const entries = 4
	if len(reply)%entries != 0 {
		return nil, fmt.Errorf("headgate: admit: unexpected reply %v", reply)
	}
	claims := make([]Claim, len(reply)/entries)
	// The claims' tags, carved from one slice: room for one tag a job, the trace
	// context tag of a traced job, allocated at the first job with tags.
	var tags []string
	for i := range claims {
		r := reply[i*entries : (i+1)*entries]
		if _, ok := r[1].([]any); !ok {
			return nil, fmt.Errorf("headgate: admit: unexpected reply %v", r)
		}
		// The hash is as it was before admission; admission set the rest.
		h := hashFromReply(r[1])
		if tags == nil && h["tags"] != "" {
			tags = make([]string, 0, len(claims)-i)
		}
		j := jobFromHash(asString(r, 0), h, &tags)
		claims[i] = Claim{
			Envelope:   j.Envelope,
			LeaseID:    req.LeaseID,
			Fence:      asInt(r, 2),
			ExpiresAt:  time.UnixMilli(asInt(r, 3)),
			Checkpoint: j.Checkpoint,
		}
	}
	return claims, nil
}
