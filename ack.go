package headgate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Outcome is how an attempt ended.
type Outcome int

const (
	OutcomeSuccess     Outcome = iota + 1 // done; deleted at retention 0, else completed
	OutcomeRetry                          // failed; retried after a delay or backoff, archived when attempts are spent
	OutcomeSkip                           // give up: archived
	OutcomeUndecodable                    // the job cannot be handled: undecodable
	OutcomeRevoke                         // delete the job
	OutcomeSnooze                         // run again after a delay, spending no attempt
	OutcomeRateLimited                    // not now: available again at once, no counter moves
	OutcomeLeaseLost                      // applied by ReclaimExpired, never acked
	// OutcomeHandBack is a worker shutting down with the job unfinished: available again
	// at once, no counter moves, route kept, like OutcomeRateLimited, but recorded in the
	// job's history as a hand-back.
	OutcomeHandBack
)

var outcomeNames = map[Outcome]string{
	OutcomeSuccess: "success", OutcomeRetry: "retry", OutcomeSkip: "skip",
	OutcomeUndecodable: "undecodable", OutcomeRevoke: "revoke", OutcomeSnooze: "snooze",
	OutcomeRateLimited: "rate_limited", OutcomeLeaseLost: "lease_lost", OutcomeHandBack: "hand_back",
}

func (o Outcome) String() string {
	if n, ok := outcomeNames[o]; ok {
		return n
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// StateDeleted is what Ack reports when the outcome deleted the job.
const StateDeleted State = "deleted"

// AckOpts are the details of an ack; nil means none.
type AckOpts struct {
	// Error says why the attempt failed (Retry, Skip, Undecodable); kept in the job's
	// history, cut to ErrorMessageMaxBytes.
	Error string
	// Stack is the stack of a handler that panicked; kept in the job's history, cut to
	// ErrorStackMaxBytes.
	Stack string
	Delay time.Duration // Retry: instead of backoff; Snooze: required, > 0
	// Logs are the attempt's log lines, kept in the job's history (the newest lines, up
	// to ErrorLogsMaxBytes).
	Logs []string
	// ActualWeight, when set, is what the job really cost; its rate class is trued up.
	ActualWeight *int
	// Result is stored with a Success (only when the job is retained).
	Result *Blob
}

// Ack reports how the holder's attempt ended and returns the job's state after it.
// Anyone but the current holder gets *LeaseRejectedError and changes nothing.
func (s *Store) Ack(ctx context.Context, lease LeaseRef, outcome Outcome, opts *AckOpts) (State, error) {
	res, err := s.AckMany(ctx, []AckRequest{{Lease: lease, Outcome: outcome, Opts: opts}})
	if err != nil {
		return "", err
	}
	return res[0].State, res[0].Err
}

// AckRequest is one ack of a batch.
type AckRequest struct {
	Lease   LeaseRef
	Outcome Outcome
	Opts    *AckOpts
}

// AckResult is how one ack of a batch ended: the job's state after it, or Err
// (*LeaseRejectedError) when the caller was not the holder.
type AckResult struct {
	State State
	Err   error
}

// AckMany applies a batch of acks in one round trip. Each ack stands alone: one holder's
// rejection does not affect the others. Invalid input rejects the whole batch.
func (s *Store) AckMany(ctx context.Context, acks []AckRequest) ([]AckResult, error) {
	if len(acks) > MaxBatch {
		return nil, invalid("acks", "batch of %d is more than %d", len(acks), MaxBatch)
	}
	args := make([]any, 0, 4+ackFields*len(acks))
	args = append(args, ms(s.cfg.RetryBase), ms(s.cfg.RetryCap), len(acks), 0)
	var details []any // the detail groups, after every ack's group
	for i, a := range acks {
		plain, detail, err := ackArgs(fmt.Sprintf("acks[%d]", i), a)
		if err != nil {
			return nil, err
		}
		args = append(args, plain...)
		if detail != nil {
			details = append(append(details, i+1), detail...)
			args[3] = args[3].(int) + 1
		}
	}
	args = append(args, details...)
	reply, err := s.run(ctx, scriptAck, "", args...)
	if err != nil {
		return nil, err
	}
	if len(reply) != len(acks) {
		return nil, fmt.Errorf("headgate: ack: %d replies to %d acks: %v", len(reply), len(acks), reply)
	}
	out := make([]AckResult, len(acks))
	for i := range acks {
		// The state after the ack, or a refusal: its code and what goes with it.
		switch r := reply[i].(type) {
		case string:
			out[i].State = State(r)
		case []any:
			if len(r) == 0 || asInt(r, 0) == replyOK {
				return nil, fmt.Errorf("headgate: ack: unexpected reply %v", r)
			}
			out[i].Err = replyError("ack", acks[i].Lease.JobID, asInt(r, 0), r[1:])
		default:
			return nil, fmt.Errorf("headgate: ack: unexpected reply %v", reply[i])
		}
	}
	return out, nil
}

// An ack's arguments (lua/ack.lua): ackFields for every ack, and a detail group (which
// ack, then its details) for one that has details.
const ackFields = 4

// ackArgs returns the ack's arguments, and its details (nil when it has none: no error,
// delay, actual weight, result, logs or stack).
func ackArgs(field string, a AckRequest) (plain, detail []any, err error) {
	opts := a.Opts
	if opts == nil {
		opts = &AckOpts{}
	}
	if err := validateLease(a.Lease); err != nil {
		return nil, nil, err
	}
	switch a.Outcome {
	case OutcomeLeaseLost:
		return nil, nil, invalid(field+".Outcome", "lease_lost is applied by ReclaimExpired, not acked")
	case OutcomeSnooze:
		if opts.Delay <= 0 {
			return nil, nil, invalid(field+".Delay", "snooze requires a delay > 0")
		}
	}
	if _, ok := outcomeNames[a.Outcome]; !ok {
		return nil, nil, invalid(field+".Outcome", "unknown %s", a.Outcome)
	}
	if err := validateDuration(field+".Delay", opts.Delay); err != nil {
		return nil, nil, err
	}
	actual := -1
	if opts.ActualWeight != nil {
		if *opts.ActualWeight < 0 || *opts.ActualWeight > MaxWeight {
			return nil, nil, invalid(field+".ActualWeight", "is %d, outside 0..%d", *opts.ActualWeight, MaxWeight)
		}
		actual = *opts.ActualWeight
	}
	var result Blob
	if opts.Result != nil {
		if a.Outcome != OutcomeSuccess {
			return nil, nil, invalid(field+".Result", "only a success carries a result")
		}
		if err := validateBlob(field+".Result", opts.Result); err != nil {
			return nil, nil, err
		}
		result = *opts.Result
	}
	logs := ""
	if kept := capLogs(opts.Logs); len(kept) > 0 {
		b, err := json.Marshal(kept)
		if err != nil {
			return nil, nil, invalid(field+".Logs", "%v", err)
		}
		logs = string(b)
	}
	l := a.Lease
	plain = []any{l.JobID, l.LeaseID, l.Fence, a.Outcome.String()}
	if opts.Error == "" && opts.Delay == 0 && actual < 0 && opts.Result == nil && logs == "" && opts.Stack == "" {
		return plain, nil, nil
	}
	return plain, []any{capText(opts.Error, ErrorMessageMaxBytes), ms(opts.Delay), actual, result.SchemaVersion,
		result.Bytes, logs, capText(opts.Stack, ErrorStackMaxBytes)}, nil
}

// capText cuts s to at most max bytes, on a rune boundary, marking the cut.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "… (truncated)"
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// capLogs keeps the newest log lines that fit in ErrorLogsMaxBytes, each line cut to it.
func capLogs(logs []string) []string {
	total, first := 0, len(logs)
	for first > 0 {
		line := capText(logs[first-1], ErrorLogsMaxBytes)
		if total+len(line) > ErrorLogsMaxBytes && first < len(logs) {
			break
		}
		total += len(line)
		first--
	}
	out := make([]string, 0, len(logs)-first)
	for _, l := range logs[first:] {
		out = append(out, capText(l, ErrorLogsMaxBytes))
	}
	return out
}
