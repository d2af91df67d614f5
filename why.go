package headgate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/headgate/headgate/internal/humandur"
)

// WhyReason names one reason a job is not running now (see Explanation).
type WhyReason string

// The reasons Why gives, in the order it gives them when several apply (most decisive
// first). A workflow's reasons are WhyWorkflow's (wf_why.go).
const (
	// WhyCorrupt: the job's data is unusable; it was parked aside (Reason.Message says why).
	WhyCorrupt WhyReason = "corrupt"
	// WhyRunning: running on Reason.Worker (lease Reason.LeaseID, fence Reason.Fence)
	// since Reason.Since; its lease lasts until Reason.LeaseUntil.
	WhyRunning WhyReason = "running"
	// WhyLeaseExpired: the running job's lease ran out at Reason.At; the reclaimer will
	// hand the job back (retryable, or quarantined at the crash limit).
	WhyLeaseExpired WhyReason = "lease_expired"
	// WhyWorkerGone: the worker holding the running job is not live; last seen at
	// Reason.LastSeen (zero: no heartbeat of it is listed).
	WhyWorkerGone WhyReason = "worker_gone"
	// WhyFinished: the job is in a terminal Reason.State since Reason.At; Reason.Outcome
	// is how its last attempt ended ("success", "retry", "skip", "lease_lost", ...) with
	// Reason.Message, its error.
	WhyFinished WhyReason = "finished"
	// WhyStaged: the job is pending until an operator or producer releases it.
	WhyStaged WhyReason = "staged"
	// WhyScheduled: the job is scheduled for Reason.At.
	WhyScheduled WhyReason = "scheduled"
	// WhyRetrying: the job failed Reason.Attempt of Reason.MaxAttempts attempts and is
	// retried at Reason.At.
	WhyRetrying WhyReason = "retrying"
	// WhyPaused: admission from Reason.Queue is paused.
	WhyPaused WhyReason = "paused"
	// WhyQuarantined: the job's Reason.Fingerprint is quarantined since job
	// Reason.CrashedJob crashed into the crash limit; the job is held until an operator
	// releases the fingerprint.
	WhyQuarantined WhyReason = "quarantined_fingerprint"
	// WhyRateLimited: the job's rate class Reason.Class has Reason.Tokens of the
	// Reason.Weight tokens the job needs (burst Reason.Burst); the bucket holds them at
	// Reason.At, or never when Reason.At is zero: a class at limit 0 refills nothing.
	WhyRateLimited WhyReason = "rate_limited"
	// WhyTooHeavy: the job's Reason.Weight is more than its class's Reason.Burst: it
	// cannot run at the class's current limit.
	WhyTooHeavy WhyReason = "too_heavy"
	// WhyPinnedWorkerGone: the job is pinned to Reason.Worker, which is not live; last
	// seen at Reason.LastSeen (zero: no heartbeat of it is listed).
	WhyPinnedWorkerGone WhyReason = "pinned_worker_gone"
	// WhyNoLiveWorker: no live worker serves Reason.Queue; for a pinned job, its live
	// worker Reason.Worker does not.
	WhyNoLiveWorker WhyReason = "no_live_worker"
	// WhyNoWorkerForKind: the live workers of Reason.Queue (for a pinned job, its worker
	// Reason.Worker) have no handler for Reason.Kind.
	WhyNoWorkerForKind WhyReason = "no_worker_for_kind"
	// WhyWorkersBusy: every live worker of Reason.Queue that handles the job's kind (for
	// a pinned job, its worker Reason.Worker) was running as many jobs as it runs at once
	// at its last heartbeat: Reason.Running jobs in flight of Reason.Cap slots, summed.
	// The heartbeats are up to a beat old (worker.Config.HeartbeatInterval).
	WhyWorkersBusy WhyReason = "workers_busy"
	// WhyFingerprintCap: Reason.Running jobs of Reason.Fingerprint are running, the
	// namespace's in-flight cap per fingerprint (Reason.Cap).
	WhyFingerprintCap WhyReason = "fingerprint_cap"
	// WhyPartitionTurn: the job waits for its partition's turn: Reason.Ahead jobs go
	// before it at Reason.Quantum (Reason.AheadInPartition of its own partition, the
	// rest from the other Reason.Partitions - 1 partitions of the ring, of which
	// Reason.PartitionsAhead take their turn before its partition); its partition needs
	// Reason.Rounds more rounds. Every job counts as weight 1; Reason.Exact is false when
	// the ring had more partitions than were read.
	WhyPartitionTurn WhyReason = "partition_turn"
	// WhyQueueFull: Reason.Queue holds Reason.Unfinished unfinished jobs, at or past its
	// enqueue limit Reason.Limit: new jobs to it are refused until some finish.
	WhyQueueFull WhyReason = "queue_full"
)

// Reason is one reason, with its numbers; which fields are set depends on Reason (see
// the WhyReason constants).
type Reason struct {
	Reason WhyReason `json:"reason"`

	Queue       string `json:"queue,omitempty"`
	Kind        string `json:"kind,omitempty"`
	Class       string `json:"class,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	CrashedJob  string `json:"crashed_job,omitempty"`
	Worker      string `json:"worker,omitempty"`
	LeaseID     string `json:"lease_id,omitempty"`
	State       State  `json:"state,omitempty"`
	Outcome     string `json:"outcome,omitempty"`
	Message     string `json:"message,omitempty"`

	At         time.Time `json:"at,omitzero"`
	Since      time.Time `json:"since,omitzero"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	LastSeen   time.Time `json:"last_seen,omitzero"`

	Fence       int64 `json:"fence,omitempty"`
	Attempt     int64 `json:"attempt,omitempty"`
	MaxAttempts int64 `json:"max_attempts,omitempty"`
	Tokens      int64 `json:"tokens,omitempty"`
	Weight      int64 `json:"weight,omitempty"`
	Burst       int64 `json:"burst,omitempty"`
	Running     int64 `json:"running,omitempty"`
	Cap         int64 `json:"cap,omitempty"`
	Unfinished  int64 `json:"unfinished,omitempty"`
	Limit       int64 `json:"limit,omitempty"`

	Ahead            int64 `json:"ahead,omitempty"`
	AheadInPartition int64 `json:"ahead_in_partition,omitempty"`
	PartitionsAhead  int64 `json:"partitions_ahead,omitempty"`
	Partitions       int64 `json:"partitions,omitempty"`
	Rounds           int64 `json:"rounds,omitempty"`
	Quantum          int64 `json:"quantum,omitempty"`
	Exact            bool  `json:"exact,omitempty"`
}

// Explanation is why a job is not running now, as the store's state says at Now.
type Explanation struct {
	ID    string `json:"id"`
	State State  `json:"state"` // "" for a job parked as corrupt whose hash is gone
	// Now is the store time the explanation holds at.
	Now time.Time `json:"now"`
	// Reasons are every reason that applies, most decisive first; never empty.
	Reasons []Reason `json:"reasons"`
}

// WhyOptions tunes Why. The zero value is usable.
type WhyOptions struct {
	// Quantum is the partition turn's credit to count the jobs ahead with: the workers'
	// worker.Config.Quantum. Defaults to 1.
	Quantum int
}

// Bounds of a why call's reads.
const (
	whyRingCap   = 256 // partitions read for the turn count (about 0.3 ms of Redis time, BenchmarkWhy)
	whyWorkerCap = 64  // live workers whose kinds are read
)

// Why explains, in one read-only script (lua/why.lua), why the job is not running now.
// It returns an error matching ErrJobNotFound when no job has the id.
func (s *Store) Why(ctx context.Context, id string, opts *WhyOptions) (*Explanation, error) {
	if err := validateRequired("id", id, true); err != nil {
		return nil, err
	}
	quantum := 1
	if opts != nil && opts.Quantum != 0 {
		quantum = opts.Quantum
	}
	if quantum < 1 || quantum > MaxWeight {
		return nil, invalid("Quantum", "is %d, outside 1..%d", quantum, MaxWeight)
	}
	reply, err := s.run(ctx, scriptWhy, id, id, quantum, whyRingCap, whyWorkerCap)
	if err != nil {
		return nil, err
	}
	if len(reply) < 2 {
		return nil, fmt.Errorf("headgate: why: unexpected reply %v", reply)
	}
	e := &Explanation{ID: id, State: State(asString(reply, 0)), Now: time.UnixMilli(asInt(reply, 1))}
	for _, v := range reply[2:] {
		r, ok := v.([]any)
		if !ok || len(r) == 0 || len(r)%2 != 1 {
			return nil, fmt.Errorf("headgate: why: unexpected reason %v", v)
		}
		e.Reasons = append(e.Reasons, reasonFromReply(r))
	}
	return e, nil
}

// reasonFromReply reads one reason of why.lua's reply: {name, field, value, ...}.
func reasonFromReply(r []any) Reason {
	out := Reason{Reason: WhyReason(asString(r, 0))}
	for i := 1; i+1 < len(r); i += 2 {
		n := asInt(r, i+1)
		v := asString(r, i+1)
		switch asString(r, i) {
		case "queue":
			out.Queue = v
		case "kind":
			out.Kind = v
		case "class":
			out.Class = v
		case "fingerprint":
			out.Fingerprint = v
		case "crashed_job":
			out.CrashedJob = v
		case "worker":
			out.Worker = v
		case "lease":
			out.LeaseID = v
		case "state":
			out.State = State(v)
		case "outcome":
			out.Outcome = v
		case "message", "why":
			out.Message = v
		case "at", "refill_at":
			out.At = fromMs(n)
		case "since":
			out.Since = fromMs(n)
		case "lease_until":
			out.LeaseUntil = fromMs(n)
		case "seen":
			out.LastSeen = fromMs(n)
		case "fence":
			out.Fence = n
		case "attempt":
			out.Attempt = n
		case "max_attempts":
			out.MaxAttempts = n
		case "tokens":
			out.Tokens = n
		case "weight":
			out.Weight = n
		case "burst":
			out.Burst = n
		case "running":
			out.Running = n
		case "cap":
			out.Cap = n
		case "unfinished":
			out.Unfinished = n
		case "limit":
			out.Limit = n
		case "ahead":
			out.Ahead = n
		case "in_partition":
			out.AheadInPartition = n
		case "partitions_ahead":
			out.PartitionsAhead = n
		case "partitions":
			out.Partitions = n
		case "rounds":
			out.Rounds = n
		case "quantum":
			out.Quantum = n
		case "exact":
			out.Exact = n == 1
		}
	}
	return out
}

// Sentence says the reason in words, with its times relative to now.
func (r Reason) Sentence(now time.Time) string {
	worker := func(name string, seen time.Time) string {
		if seen.IsZero() {
			return fmt.Sprintf("worker %s, which has no heartbeat listed", name)
		}
		return fmt.Sprintf("worker %s, not seen since %s", name, whenFrom(seen, now))
	}
	switch r.Reason {
	case WhyCorrupt:
		return "its stored data is unusable and it was parked aside: " + r.Message
	case WhyRunning:
		on := "lease " + r.LeaseID
		if r.Worker != "" {
			on = "worker " + r.Worker + " (lease " + r.LeaseID + ")"
		}
		return fmt.Sprintf("running on %s since %s with fence %d, lease until %s",
			on, whenFrom(r.Since, now), r.Fence, whenFrom(r.LeaseUntil, now))
	case WhyLeaseExpired:
		return fmt.Sprintf("its lease ran out %s: the reclaimer will hand it back", whenFrom(r.At, now))
	case WhyWorkerGone:
		return "it is held by " + worker(r.Worker, r.LastSeen)
	case WhyFinished:
		s := fmt.Sprintf("finished: %s %s", r.State, whenFrom(r.At, now))
		if r.Outcome != "" {
			s += ", outcome " + r.Outcome
		}
		if r.Message != "" {
			s += ": " + r.Message
		}
		return s
	case WhyStaged:
		return "staged (pending) until released"
	case WhyScheduled:
		return "scheduled at " + whenFrom(r.At, now)
	case WhyRetrying:
		return fmt.Sprintf("retrying at %s after %d of %d attempts", whenFrom(r.At, now), r.Attempt, r.MaxAttempts)
	case WhyPaused:
		return fmt.Sprintf("its queue %s is paused", r.Queue)
	case WhyQuarantined:
		return fmt.Sprintf("held behind quarantined fingerprint %s (crashed job %s)", r.Fingerprint, r.CrashedJob)
	case WhyRateLimited:
		if r.At.IsZero() {
			return fmt.Sprintf("its rate class %s has %d of the %d tokens it needs (burst %d) and never refills: its limit is 0",
				r.Class, r.Tokens, r.Weight, r.Burst)
		}
		return fmt.Sprintf("its rate class %s has %d of the %d tokens it needs (burst %d) and holds them at %s",
			r.Class, r.Tokens, r.Weight, r.Burst, whenFrom(r.At, now))
	case WhyTooHeavy:
		return fmt.Sprintf("its weight %d is more than the burst %d of its rate class %s: it cannot run at the class's limit",
			r.Weight, r.Burst, r.Class)
	case WhyPinnedWorkerGone:
		return "pinned to " + worker(r.Worker, r.LastSeen)
	case WhyNoLiveWorker:
		if r.Worker != "" {
			return fmt.Sprintf("it is pinned to worker %s, which does not serve its queue %s", r.Worker, r.Queue)
		}
		return fmt.Sprintf("no live worker serves its queue %s", r.Queue)
	case WhyNoWorkerForKind:
		if r.Worker != "" {
			return fmt.Sprintf("it is pinned to worker %s, which has no handler for its kind %s", r.Worker, r.Kind)
		}
		return fmt.Sprintf("no live worker of its queue %s handles its kind %s", r.Queue, r.Kind)
	case WhyWorkersBusy:
		if r.Worker != "" {
			return fmt.Sprintf("it is pinned to worker %s, which is busy: %d jobs in flight of %d at its last heartbeat",
				r.Worker, r.Running, r.Cap)
		}
		return fmt.Sprintf("every live worker of its queue %s that handles it is busy: %d jobs in flight of %d at their last heartbeats",
			r.Queue, r.Running, r.Cap)
	case WhyFingerprintCap:
		return fmt.Sprintf("%d jobs of its fingerprint %s are running, the in-flight cap %d", r.Running, r.Fingerprint, r.Cap)
	case WhyPartitionTurn:
		at := ""
		if !r.Exact {
			at = "at least "
		}
		return fmt.Sprintf("its partition's turn: %s%s ahead in the ring at quantum %d (%d in its own partition, %s before it in turn order, %s to go)",
			at, plural(r.Ahead, "job"), r.Quantum, r.AheadInPartition, plural(r.PartitionsAhead, "partition"), plural(r.Rounds, "round"))
	case WhyQueueFull:
		return fmt.Sprintf("its queue %s is at its enqueue limit: %d unfinished of %d", r.Queue, r.Unfinished, r.Limit)
	}
	return string(r.Reason)
}

// String is the explanation in words: the job, its state, then one reason a line.
func (e *Explanation) String() string {
	var b strings.Builder
	if e.State == "" {
		// Its data could not be read, so neither could its state: the reason says why.
		fmt.Fprintf(&b, "job %s cannot be read:\n", e.ID)
	} else {
		fmt.Fprintf(&b, "job %s is %s:\n", e.ID, e.State)
	}
	for _, r := range e.Reasons {
		b.WriteString("  - " + r.Sentence(e.Now) + "\n")
	}
	return b.String()
}

// plural is "1 job", "2 jobs".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// whenFrom is t in UTC to the millisecond, with how far it is from now.
func whenFrom(t, now time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z")
	switch d := t.Sub(now); {
	case d > 0:
		return s + " (in " + humandur.String(d) + ")"
	case d < 0:
		return s + " (" + humandur.String(-d) + " ago)"
	}
	return s + " (now)"
}
