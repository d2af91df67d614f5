package headgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// GetJob returns the stored job, or ErrJobNotFound.
func (s *Store) GetJob(ctx context.Context, id string) (*Job, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	h := pipe.HGetAll(ctx, s.keys.Job(id))
	exp := pipe.ZScore(ctx, s.keys.Leases(), id)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	if len(h.Val()) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	return withLease(jobFromHash(id, h.Val(), nil), exp), nil
}

// Caps of a job's error history: the store keeps the newest ErrorHistoryMaxEntries
// entries whose stored size (JSON) adds up to at most ErrorHistoryMaxBytes, dropping the
// oldest first (the newest entry is always kept). Each entry's message, stack and logs
// are cut to their own cap before they are stored.
const (
	ErrorHistoryMaxEntries = 32
	ErrorHistoryMaxBytes   = 64 << 10
	ErrorMessageMaxBytes   = 4 << 10
	ErrorStackMaxBytes     = 8 << 10
	ErrorLogsMaxBytes      = 8 << 10
)

// AttemptError is one entry of a job's error history: how an attempt ended, when it was
// not plainly a success (a failure, a lost lease, a snooze past the limit, a hand-back,
// or any attempt that left logs).
type AttemptError struct {
	At           time.Time // store time of the transition
	Attempt      int       // the job's failed attempts after it (Number is the attempt's own)
	CrashAttempt int       // the job's lost leases after it
	Fence        int64     // the admission the attempt ran under
	LeaseID      string    // the lease id the attempt ran under (not the worker's id)
	// Outcome is what ended the attempt ("retry", "lease_lost", "snooze", "hand_back",
	// ...), and State the state it left the job in: a last retry is Outcome "retry" with
	// State StateArchived.
	Outcome string
	State   State
	Message string   // the error, capped at ErrorMessageMaxBytes
	Stack   string   // a panic's stack, capped at ErrorStackMaxBytes
	Logs    []string // the attempt's log lines
}

// Number is the 1-based number of the attempt the entry records, as the worker's log
// lines count it (Envelope.Attempt+1 while it ran): an attempt that failed counted
// itself in Attempt, one that ended otherwise (a lost lease, a snooze within the limit,
// a hand-back, a skip, a success with logs) did not.
func (e AttemptError) Number() int {
	if e.failed() {
		return e.Attempt
	}
	return e.Attempt + 1
}

// failed reports whether the attempt counted as a failed one: a retry, or a snooze past
// the policy's limit (which retries or archives the job, where one within it schedules).
func (e AttemptError) failed() bool {
	switch e.Outcome {
	case "retry":
		return true
	case "snooze":
		return e.State == StateRetryable || e.State == StateArchived
	}
	return false
}

// String renders the entry on one line without its time and stack, e.g.
// "retry -> archived (attempt 3, fence 4, lease w1-7): connection refused", the
// attempt given by its Number.
func (e AttemptError) String() string {
	if e.Outcome == "" {
		return e.Message // an entry from before the history was structured
	}
	var b strings.Builder
	b.WriteString(e.Outcome)
	if e.State != "" {
		b.WriteString(" -> " + string(e.State))
	}
	fmt.Fprintf(&b, " (attempt %d", e.Number())
	if e.CrashAttempt > 0 {
		fmt.Fprintf(&b, ", crash %d", e.CrashAttempt)
	}
	fmt.Fprintf(&b, ", fence %d", e.Fence)
	if e.LeaseID != "" {
		b.WriteString(", lease " + e.LeaseID)
	}
	b.WriteString(")")
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if len(e.Logs) > 0 {
		b.WriteString("; logs: " + strings.Join(e.Logs, " | "))
	}
	return b.String()
}

// attemptErrorJSON is an AttemptError as lib.lua push_error stores it.
type attemptErrorJSON struct {
	At      float64  `json:"at"`
	Attempt int      `json:"attempt"`
	Crash   int      `json:"crash"`
	Fence   int64    `json:"fence"`
	LeaseID string   `json:"worker"` // lib.lua push_error stores the lease id under "worker"
	Outcome string   `json:"outcome"`
	State   string   `json:"state"`
	Msg     string   `json:"msg"`
	Stack   string   `json:"stack"`
	Logs    []string `json:"logs"`
}

// parseAttemptError decodes one stored entry. Entries written before the history was
// structured are plain text; they come back as the Message alone.
func parseAttemptError(line string) AttemptError {
	var e attemptErrorJSON
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		return AttemptError{Message: line}
	}
	return AttemptError{At: fromMs(int64(e.At)), Attempt: e.Attempt, CrashAttempt: e.Crash, Fence: e.Fence,
		LeaseID: e.LeaseID, Outcome: e.Outcome, State: State(e.State), Message: e.Msg, Stack: e.Stack, Logs: e.Logs}
}

// JobErrors returns the job's error history, oldest first.
func (s *Store) JobErrors(ctx context.Context, id string) ([]AttemptError, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	lines, err := s.rdb.LRange(ctx, s.keys.Errors(id), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make([]AttemptError, len(lines))
	for i, l := range lines {
		out[i] = parseAttemptError(l)
	}
	return out, nil
}

// JobResult returns a completed job's result, or nil when it has none.
func (s *Store) JobResult(ctx context.Context, id string) (*StoredBlob, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	return s.getBlob(ctx, s.keys.Result(id))
}

// JobOutput returns the job's latest output, or nil when it has none.
func (s *Store) JobOutput(ctx context.Context, id string) (*StoredBlob, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	return s.getBlob(ctx, s.keys.Output(id))
}

func (s *Store) getBlob(ctx context.Context, key string) (*StoredBlob, error) {
	h, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil || len(h) == 0 {
		return nil, err
	}
	return &StoredBlob{
		Blob:      Blob{SchemaVersion: atoi(h["schema"]), Bytes: []byte(h["bytes"])},
		Fence:     int64(atoi(h["fence"])),
		UpdatedAt: time.UnixMilli(int64(atoi(h["at"]))),
	}, nil
}

// JobProgress returns the job's latest progress, or nil when it has none.
func (s *Store) JobProgress(ctx context.Context, id string) (*Progress, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	h, err := s.rdb.HGetAll(ctx, s.keys.Progress(id)).Result()
	if err != nil || len(h) == 0 {
		return nil, err
	}
	return &Progress{
		Current: int64(atoi(h["current"])), Total: int64(atoi(h["total"])), Message: h["message"],
		Fence: int64(atoi(h["fence"])), UpdatedAt: time.UnixMilli(int64(atoi(h["at"]))),
	}, nil
}

// withLease sets a running job's lease expiry from its entry in the leases ZSET.
func withLease(j *Job, exp *redis.FloatCmd) *Job {
	if v, err := exp.Result(); err == nil && j.State == StateRunning {
		j.LeaseExpiresAt = time.UnixMilli(int64(v))
	}
	return j
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
