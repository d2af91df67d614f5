package headgate

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// State is where a job is in its lifecycle.
type State string

const (
	StatePending     State = "pending"     // staged: waits for ReleasePending
	StateScheduled   State = "scheduled"   // waits for its time
	StateAvailable   State = "available"   // ready to be admitted
	StateRunning     State = "running"     // leased to a worker
	StateRetryable   State = "retryable"   // failed, waits for its retry time
	StateCompleted   State = "completed"   // succeeded (kept for its retention)
	StateArchived    State = "archived"    // skipped, or failed with attempts spent
	StateCancelled   State = "cancelled"   // cancelled by an operator
	StateUndecodable State = "undecodable" // its payload or kind could not be handled
	StateQuarantined State = "quarantined" // crashed up to the crash limit; waits for an operator
)

// States lists every state in lifecycle order.
var States = []State{StatePending, StateScheduled, StateAvailable, StateRunning, StateRetryable,
	StateCompleted, StateArchived, StateCancelled, StateUndecodable, StateQuarantined}

// Terminal reports whether a job in this state is finished.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateArchived, StateCancelled, StateUndecodable, StateQuarantined:
		return true
	}
	return false
}

// ReplaceMask selects what a duplicate enqueue replaces in the job that holds its unique
// key, while that job is still scheduled, available or retryable.
type ReplaceMask uint8

const (
	// ReplacePayload replaces payload, fingerprint and schema version.
	ReplacePayload ReplaceMask = 1 << iota
	// ReplaceScheduledAt replaces the run time of a holder that is scheduled.
	ReplaceScheduledAt
	// ReplacePriority replaces the priority.
	ReplacePriority
	// ReplaceMaxAttempts replaces the attempt limit.
	ReplaceMaxAttempts

	replaceAll = ReplacePayload | ReplaceScheduledAt | ReplacePriority | ReplaceMaxAttempts
)

// Defaults applied by Enqueue to zero fields.
const (
	QueueDefault         = "default"
	MaxAttemptsDefault   = 25
	SchemaVersionDefault = 1
	WeightDefault        = 1
)

// Limits on what a job may carry.
const (
	MaxPayloadBytes  = 32 << 20 // payload, result and output bytes
	MaxSchemaVersion = 1<<31 - 1
	MaxWeight        = 1 << 20
	maxScheduledMs   = 1<<53 - 1 // store times are Lua numbers: exact up to 2^53 ms (year 287396)
	MaxNameBytes     = 256       // ids, kinds, queues, partitions, fingerprints, classes, tags
	MaxBatch         = 10_000
	MaxCapacity      = 1_000 // jobs admitted by one Admit call
	MaxMessageBytes  = 4096  // progress message
)

// MetaTagPrefix starts the tags that are metadata travelling with a job (contrib/otel's
// trace context): kept and returned like any tag, but not filed in the tag indexes, so
// that a tag of its own on every job costs no index key per state and no index write
// per transition. ListJobs and the bulk verbs filter by one by checking each job of the
// index they walk.
const MetaTagPrefix = "_"

// Envelope is one job as a producer describes it and as the store hands it to a worker.
type Envelope struct {
	ID      string // required; reusing an id with the same kind, fingerprint and queue is an idempotent replay
	Kind    string // required; selects the handler
	Payload []byte

	Queue        string // defaults to QueueDefault
	PartitionKey string // admission takes turns across partitions (tenants)
	Fingerprint  string // identifies jobs that crash alike; a quarantined fingerprint blocks its siblings
	Priority     int32  // higher first, inside a partition
	StickyWorker string // only this worker may admit the job
	// ScheduledAt is when the job becomes available; zero or a past time (one before
	// 1970 included) means now.
	ScheduledAt time.Time
	// ScheduledIn, with ScheduledAt zero, runs the job this long after the store time of
	// the enqueue: the producer's clock plays no part.
	ScheduledIn time.Duration
	// Retention keeps a completed job this long before eviction; 0 deletes it at success.
	// Other terminal states are kept by the namespace Policy: archived, undecodable and
	// cancelled for its retention of each (RetentionFailedDefault), quarantined jobs are
	// never evicted (they wait for an operator).
	Retention     time.Duration
	MaxAttempts   int // defaults to MaxAttemptsDefault
	SchemaVersion int // payload schema version; defaults to SchemaVersionDefault
	Weight        int // admission cost in rate tokens and round-robin credit; defaults to 1
	Tags          []string
	RateClass     string // token bucket charged at admission; unconfigured classes are unlimited

	// UniqueKey makes the job unique by (queue, kind, key) in the namespace. With
	// UniqueWindow 0 the key is held until the job is terminal; with a window it is held
	// until the window ends, whatever the job's state.
	UniqueKey      string
	UniqueWindow   time.Duration
	UniqueReplace  ReplaceMask   // what a duplicate replaces in the holder
	UniqueDebounce time.Duration // a duplicate replaces payload, fingerprint and tags and pushes the holder to now+debounce

	Pending bool // stage the job until ReleasePending

	// Set by the store.
	Attempt      int // failed attempts (Retry outcomes, and snoozes past the policy's limit)
	CrashAttempt int // attempts lost to expired leases
	Snoozes      int // Snooze outcomes so far; past Policy.SnoozeLimit a snooze is a failed attempt
}

// LeaseRef identifies one admission of a job: the holder's proof in every write.
type LeaseRef struct {
	JobID   string
	LeaseID string
	Fence   int64
}

// Checkpoint is a job's step record: the step in progress (a crash is charged to it) and
// the steps done (a later attempt skips them).
type Checkpoint struct {
	InProgress string
	Done       []string
	// CrashesByStep counts lost leases per step in progress; kept by the store.
	CrashesByStep map[string]int
}

// Claim is a job admitted to a worker.
type Claim struct {
	Envelope   Envelope
	LeaseID    string
	Fence      int64
	ExpiresAt  time.Time
	Checkpoint Checkpoint
}

// LeaseRef returns the reference the holder passes to Ack, Renew and the other writes.
func (c *Claim) LeaseRef() LeaseRef {
	return LeaseRef{JobID: c.Envelope.ID, LeaseID: c.LeaseID, Fence: c.Fence}
}

// Job is the full stored record of a job.
type Job struct {
	Envelope
	State          State
	Fence          int64
	LeaseID        string
	LeaseExpiresAt time.Time
	CreatedAt      time.Time
	FinalizedAt    time.Time
	Checkpoint     Checkpoint
	// Held is true while the job is available but set aside by a quarantined fingerprint.
	Held bool
}

// ValidateName checks a name that becomes part of a Redis key (namespace, partition,
// fingerprint, rate class, id) and returns an *InvalidError naming field when it has a
// brace or a control character or is longer than MaxNameBytes.
func ValidateName(field, v string) error { return validateName(field, v, true) }

// ValidateQueueName is ValidateName for queue and worker names, which also may not
// contain ':'.
func ValidateQueueName(field, v string) error { return validateName(field, v, false) }

// validateName checks a name that becomes part of a Redis key. Braces would change the
// cluster hash tag, control characters are never meaningful; queue and worker names
// also may not contain ':' because another key segment follows them.
func validateName(field, v string, colonOK bool) error {
	if len(v) > MaxNameBytes {
		return invalid(field, "longer than %d bytes", MaxNameBytes)
	}
	// Bytes, not runes, looked up in a table: every character refused is ASCII, and in
	// UTF-8 (valid or not) a byte below 0x80 is always a character of its own. Decoding
	// runes and comparing each cost a traced job's enqueue a thousand instructions for its
	// trace context tag alone.
	for i := 0; i < len(v); i++ {
		switch nameBytes[v[i]] {
		case 0:
		case nameBrace:
			return invalid(field, "%q contains a brace", v)
		case nameControl:
			return invalid(field, "%q contains a control character", v)
		case nameColon:
			if !colonOK {
				return invalid(field, "%q contains ':'", v)
			}
		}
	}
	return nil
}

// What validateName refuses of each byte.
const (
	nameBrace = 1 + iota
	nameControl
	nameColon
)

var nameBytes = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = nameControl
	}
	t[0x7f] = nameControl
	t['{'], t['}'], t[':'] = nameBrace, nameBrace, nameColon
	return t
}()

func validateRequired(field, v string, colonOK bool) error {
	if v == "" {
		return invalid(field, "is empty")
	}
	return validateName(field, v, colonOK)
}

func validateDuration(field string, d time.Duration) error {
	if d < 0 {
		return invalid(field, "is negative (%s)", d)
	}
	return nil
}

// normalize validates one envelope and returns it with defaults applied.
func normalize(field string, e Envelope) (Envelope, error) {
	e, err := normalizeFields(e)
	return e, prefixField(field, err)
}

// normalizeFields is normalize with the fields named as in Envelope: the names are built
// only for an error, not for every job.
func normalizeFields(e Envelope) (Envelope, error) {
	if err := validateRequired("ID", e.ID, true); err != nil {
		return e, err
	}
	if err := validateRequired("Kind", e.Kind, true); err != nil {
		return e, err
	}
	if len(e.Payload) > MaxPayloadBytes {
		return e, invalid("Payload", "is %d bytes, more than the %d byte limit", len(e.Payload), MaxPayloadBytes)
	}
	if e.Queue == "" {
		e.Queue = QueueDefault
	}
	checks := []struct {
		field   string
		v       string
		colonOK bool
	}{
		{"Queue", e.Queue, false},
		{"PartitionKey", e.PartitionKey, true},
		{"Fingerprint", e.Fingerprint, true},
		{"StickyWorker", e.StickyWorker, false},
		{"RateClass", e.RateClass, true},
	}
	for _, c := range checks {
		if err := validateName(c.field, c.v, c.colonOK); err != nil {
			return e, err
		}
	}
	if e.ScheduledAt.After(time.UnixMilli(maxScheduledMs)) { // compared as times: UnixMilli overflows far out
		return e, invalid("ScheduledAt", "is %s, later than the store's clock reaches (%s)",
			e.ScheduledAt.UTC().Format(time.RFC3339), time.UnixMilli(maxScheduledMs).UTC().Format(time.RFC3339))
	}
	for _, d := range []struct {
		field string
		d     time.Duration
	}{{"Retention", e.Retention}, {"UniqueWindow", e.UniqueWindow}, {"UniqueDebounce", e.UniqueDebounce}, {"ScheduledIn", e.ScheduledIn}} {
		if err := validateDuration(d.field, d.d); err != nil {
			return e, err
		}
	}
	switch {
	case e.MaxAttempts < 0:
		return e, invalid("MaxAttempts", "is negative (%d)", e.MaxAttempts)
	case e.SchemaVersion < 0 || e.SchemaVersion > MaxSchemaVersion:
		return e, invalid("SchemaVersion", "is %d, outside 0..%d", e.SchemaVersion, MaxSchemaVersion)
	case e.Weight < 0 || e.Weight > MaxWeight:
		return e, invalid("Weight", "is %d, outside 0..%d", e.Weight, MaxWeight)
	case e.ScheduledIn != 0 && !e.ScheduledAt.IsZero():
		return e, invalid("ScheduledIn", "cannot be set together with ScheduledAt")
	case e.UniqueReplace&^replaceAll != 0:
		return e, invalid("UniqueReplace", "has unknown bits %#x", uint8(e.UniqueReplace&^replaceAll))
	case e.UniqueKey == "" && (e.UniqueWindow != 0 || e.UniqueReplace != 0 || e.UniqueDebounce != 0):
		return e, invalid("UniqueKey", "is empty but unique options are set")
	}
	if !e.ScheduledAt.IsZero() && e.ScheduledAt.Before(time.UnixMilli(1)) {
		// A time before 1970 is past like any other, so it means now; the store keeps
		// times as ms since 1970 and 0 is how a script is told "now".
		e.ScheduledAt = time.Time{}
	}
	if e.MaxAttempts == 0 {
		e.MaxAttempts = MaxAttemptsDefault
	}
	if e.SchemaVersion == 0 {
		e.SchemaVersion = SchemaVersionDefault
	}
	if e.Weight == 0 {
		e.Weight = WeightDefault
	}
	tags, err := canonicalTags("Tags", e.Tags)
	if err != nil {
		return e, err
	}
	e.Tags = tags
	return e, nil
}

// prefixField puts field in front of the field an *InvalidError names.
func prefixField(field string, err error) error {
	var inv *InvalidError
	if errors.As(err, &inv) {
		inv.Field = field + "." + inv.Field
	}
	return err
}

// canonicalTags sorts and dedupes tags.
func canonicalTags(field string, tags []string) ([]string, error) {
	if len(tags) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if err := validateRequired(field, t, true); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	slices.Sort(out)
	n := 1
	for i := 1; i < len(out); i++ {
		if out[i] != out[n-1] {
			out[n] = out[i]
			n++
		}
	}
	return out[:n], nil
}

// uniqueField scopes a unique key to its queue and kind inside the namespace.
func uniqueField(e *Envelope) string {
	if e.UniqueKey == "" {
		return ""
	}
	return e.Queue + "\n" + e.Kind + "\n" + e.UniqueKey
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// durationMs is v ms as a Duration, saturated where v * 1e6 ns would overflow (beyond
// 292 years), so that a stored duration never decodes as one of the other sign.
func durationMs(v int64) time.Duration {
	const most = int64(math.MaxInt64 / int64(time.Millisecond))
	switch {
	case v > most:
		return math.MaxInt64
	case v < -most:
		return math.MinInt64
	}
	return time.Duration(v) * time.Millisecond
}

// payloadPieces are the fields after "payload" that hold the rest of a payload stored in
// pieces, in order (PAYLOAD_PIECE_FIELDS in lua/lib.lua: pieces keep a small job's hash in
// Redis's listpack encoding).
var payloadPieces = func() []string {
	f := make([]string, 15)
	for i := range f {
		f[i] = "pl" + strconv.Itoa(i+1)
	}
	return f
}()

// payloadFromHash joins the payload of a job hash from its pieces.
func payloadFromHash(h map[string]string) []byte {
	p := []byte(h["payload"])
	for _, f := range payloadPieces {
		v, ok := h[f]
		if !ok {
			break
		}
		p = append(p, v...)
	}
	return p
}

// jobFromHash decodes a job hash (HGETALL) into a Job. Enqueue leaves out fields at
// their default (JOB_DEFAULTS in lua/lib.lua); they read back as the default here, and
// TestLuaJobFieldsMatchGo holds the field names and defaults to lib.lua's. It leaves out
// "created" while it equals "sched" (keep_created in lib.lua stores it before the first
// write of "sched"). The lease
// expiry is not in the hash but in the leases ZSET. tags, when not nil, is where the
// tags are carved from (splitTags), shared by the jobs of one reply.
func jobFromHash(id string, h map[string]string, tags *[]string) *Job {
	// A field that does not parse as an int64 (absent, corrupt, out of range) reads as 0,
	// so it takes its default like an absent one; ParseInt alone would saturate. Most
	// fields of most jobs are absent, and ParseInt's error for one would cost an
	// allocation each.
	i64 := func(f string) int64 {
		s := h[f]
		if s == "" {
			return 0
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0
		}
		return v
	}
	j := &Job{
		Envelope: Envelope{
			ID:            id,
			Kind:          h["kind"],
			Payload:       payloadFromHash(h),
			Queue:         cmp.Or(h["queue"], QueueDefault),
			PartitionKey:  h["part"],
			Fingerprint:   h["fp"],
			Priority:      int32(i64("prio")),
			StickyWorker:  h["sticky"],
			ScheduledAt:   fromMs(i64("sched")),
			Retention:     durationMs(i64("ret")),
			MaxAttempts:   cmp.Or(int(i64("maxa")), MaxAttemptsDefault),
			SchemaVersion: cmp.Or(int(i64("schema")), SchemaVersionDefault),
			Weight:        cmp.Or(int(i64("weight")), WeightDefault),
			RateClass:     h["rc"],
			UniqueWindow:  durationMs(i64("uwin")),
			Attempt:       int(i64("attempt")),
			CrashAttempt:  int(i64("crash")),
			Snoozes:       int(i64("snz")),
		},
		State:       State(h["state"]),
		Fence:       i64("fence"),
		LeaseID:     h["lease"],
		CreatedAt:   fromMs(cmp.Or(i64("created"), i64("sched"))),
		FinalizedAt: fromMs(i64("fin")),
		Held:        h["held"] == "1",
	}
	if t := h["tags"]; t != "" {
		j.Tags = splitTags(t, tags)
	}
	if u := h["ukey"]; u != "" {
		// queue \n kind \n key
		if parts := strings.SplitN(u, "\n", 3); len(parts) == 3 {
			j.UniqueKey = parts[2]
		}
	}
	j.Checkpoint.InProgress = h["step"]
	if d := h["done"]; d != "" {
		j.Checkpoint.Done = strings.Split(d, "\n")
	}
	for f, v := range h {
		if step, ok := strings.CutPrefix(f, "crash:"); ok {
			if j.Checkpoint.CrashesByStep == nil {
				j.Checkpoint.CrashesByStep = map[string]int{}
			}
			n, _ := strconv.Atoi(v)
			j.Checkpoint.CrashesByStep[step] = n
		}
	}
	return j
}

// splitTags splits a job's tags field (tags joined by newlines) in the spare capacity
// of arena, which it replaces with a larger one when the tags do not fit: the jobs of an
// admission share one allocation for their tags (a traced job carries its trace context
// tag) instead of one each. The tags returned have no spare capacity, so that an append
// to one job's copies them rather than overwriting the next job's. A nil arena makes a
// slice of the job's own.
func splitTags(t string, arena *[]string) []string {
	n := strings.Count(t, "\n") + 1
	if arena == nil {
		return strings.Split(t, "\n")
	}
	a := *arena
	if cap(a)-len(a) < n {
		// Past the room the caller made, a new arena: this job's tags and as many
		// again for the jobs after it.
		a = make([]string, 0, 2*n)
	}
	start := len(a)
	for {
		tag, rest, more := strings.Cut(t, "\n")
		a = append(a, tag)
		if !more {
			break
		}
		t = rest
	}
	*arena = a
	return a[start:len(a):len(a)]
}

func validateLease(l LeaseRef) error {
	if l.JobID == "" {
		return invalid("lease.JobID", "is empty")
	}
	if l.LeaseID == "" {
		return invalid("lease.LeaseID", "is empty")
	}
	return nil
}
