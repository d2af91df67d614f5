package rqueuetest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
)

// Enqueued describes jobs a test expects in a store. Kind is required; every other
// field is a matcher, and its zero value means "any".
type Enqueued struct {
	Kind string
	// Queue is the queue the job waits in.
	Queue string
	// Payload is the job's payload, byte for byte. RequireEnqueuedArgs compares typed
	// args instead.
	Payload []byte
	// ScheduledAt is when the job becomes available, to the millisecond.
	ScheduledAt time.Time
	// Partition is the job's partition key.
	Partition string
	// State is the job's state.
	State headgate.State
	// Count is how many jobs must match, exactly. Zero means at least one; a negative
	// Count fails the test.
	Count int
}

// Match narrows RequireEnqueuedArgs and RequireNotEnqueuedArgs; nil matches any job of
// the args' kind and value. The zero value of each field means "any".
type Match struct {
	Queue       string
	ScheduledAt time.Time
	Partition   string
	State       headgate.State
	// Count is how many jobs must match, exactly. Zero means at least one; a negative
	// Count fails the test. The Not checks ignore it.
	Count int
}

// maxListed is how many jobs a failure message lists.
const maxListed = 20

// RequireEnqueued checks that the store holds jobs as described by want (at least one,
// or exactly want.Count) and returns them, ordered by id. Otherwise it fails the test
// with what was wanted, how many of the store's jobs matched, and what the store holds:
// up to 20 jobs, the matches first, with their id, kind, queue, partition, state,
// scheduled time and payload (msgpack shown as JSON), or that it is empty.
//
// A job exists in the store until it is deleted: a success with retention 0, a revoke
// or an eviction removes it, and then it is no longer "enqueued". Check before running
// it, or give it a retention.
func RequireEnqueued(t testing.TB, store *headgate.Store, want Enqueued) []*headgate.Job {
	t.Helper()
	return requireEnqueued(t, store, want)
}

// RequireEnqueuedArgs is RequireEnqueued for typed args: it looks for jobs of args'
// kind whose payload decodes (with msgpack, as a worker decodes it) to a value equal to
// args, narrowed by m.
func RequireEnqueuedArgs[T rqueue.Args](t testing.TB, store *headgate.Store, args T, m *Match) []*headgate.Job {
	t.Helper()
	return requireEnqueuedArgs(t, store, args, m)
}

// RequireNotEnqueued checks that the store holds no job as described by want (whose
// Count is ignored). Otherwise it fails the test and lists the jobs that match.
func RequireNotEnqueued(t testing.TB, store *headgate.Store, want Enqueued) {
	t.Helper()
	requireNotEnqueued(t, store, want)
}

// RequireNotEnqueuedArgs is RequireNotEnqueued for typed args, matched as by
// RequireEnqueuedArgs.
func RequireNotEnqueuedArgs[T rqueue.Args](t testing.TB, store *headgate.Store, args T, m *Match) {
	t.Helper()
	requireNotEnqueuedArgs(t, store, args, m)
}

func requireEnqueued(t tb, store *headgate.Store, want Enqueued) []*headgate.Job {
	t.Helper()
	if want.Kind == "" {
		fatalf(t, "rqueuetest.RequireEnqueued: want.Kind is empty: name the kind of job you expect")
	}
	if want.Count < 0 {
		fatalf(t, "rqueuetest.RequireEnqueued: want.Count is negative (%d): give the exact number of jobs, or 0 for at least one", want.Count)
	}
	return check(t, "RequireEnqueued", store, matcherOf(want), want.Count, false)
}

func requireNotEnqueued(t tb, store *headgate.Store, want Enqueued) {
	t.Helper()
	if want.Kind == "" {
		fatalf(t, "rqueuetest.RequireNotEnqueued: want.Kind is empty: name the kind of job you rule out")
	}
	check(t, "RequireNotEnqueued", store, matcherOf(want), 0, true)
}

func requireEnqueuedArgs[T rqueue.Args](t tb, store *headgate.Store, args T, m *Match) []*headgate.Job {
	t.Helper()
	mt, count := argsMatcher(t, "RequireEnqueuedArgs", args, m)
	if count < 0 {
		fatalf(t, "rqueuetest.RequireEnqueuedArgs: Match.Count is negative (%d): give the exact number of jobs, or 0 for at least one", count)
	}
	return check(t, "RequireEnqueuedArgs", store, mt, count, false)
}

func requireNotEnqueuedArgs[T rqueue.Args](t tb, store *headgate.Store, args T, m *Match) {
	t.Helper()
	mt, _ := argsMatcher(t, "RequireNotEnqueuedArgs", args, m)
	check(t, "RequireNotEnqueuedArgs", store, mt, 0, true)
}

// matcher is a compiled description of the jobs a check looks for.
type matcher struct {
	kind, queue, partition string
	state                  headgate.State
	scheduledAt            time.Time
	payload                func([]byte) bool
	payloadText            string // how the description shows the payload; "" = any
}

func matcherOf(want Enqueued) matcher {
	m := matcher{kind: want.Kind, queue: want.Queue, partition: want.Partition, state: want.State,
		scheduledAt: want.ScheduledAt}
	if want.Payload != nil {
		p := want.Payload
		m.payload = func(b []byte) bool { return bytes.Equal(b, p) }
		m.payloadText = "payload " + renderPayload(p)
	}
	return m
}

// argsMatcher matches jobs of args' kind whose payload decodes into a T equal to args,
// as a worker would decode it. Values are compared in their msgpack form, decoded
// generically: map fields compare by content (msgpack encodes most maps in Go's random
// iteration order), and times by instant.
func argsMatcher[T rqueue.Args](t tb, check string, args T, m *Match) (matcher, int) {
	t.Helper()
	want, err := encodeArgs(args)
	if err != nil {
		fatalf(t, "rqueuetest.%s: encode the wanted %T args with msgpack: %v", check, args, err)
	}
	wantValue, ok := decodeMsgpack(want)
	if !ok {
		fatalf(t, "rqueuetest.%s: the wanted %T args do not decode from their own msgpack encoding", check, args)
	}
	var mm Match
	if m != nil {
		mm = *m
	}
	return matcher{
		kind: args.Kind(), queue: mm.Queue, partition: mm.Partition, state: mm.State, scheduledAt: mm.ScheduledAt,
		payload: func(b []byte) bool {
			var got T
			if err := msgpack.Unmarshal(b, &got); err != nil {
				return false
			}
			enc, err := encodeArgs(got)
			if err != nil {
				return false
			}
			v, ok := decodeMsgpack(enc)
			return ok && reflect.DeepEqual(v, wantValue)
		},
		payloadText: "args " + renderPayload(want),
	}, mm.Count
}

// encodeArgs encodes as rqueue does: msgpack with map keys sorted.
func encodeArgs(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (m matcher) matches(j *headgate.Job) bool {
	return j.Kind == m.kind &&
		(m.queue == "" || j.Queue == m.queue) &&
		(m.partition == "" || j.PartitionKey == m.partition) &&
		(m.state == "" || j.State == m.state) &&
		(m.scheduledAt.IsZero() || j.ScheduledAt.UnixMilli() == m.scheduledAt.UnixMilli()) &&
		(m.payload == nil || m.payload(j.Payload))
}

func (m matcher) describe() string {
	parts := []string{fmt.Sprintf("kind %q", m.kind)}
	if m.queue != "" {
		parts = append(parts, fmt.Sprintf("queue %q", m.queue))
	}
	if m.partition != "" {
		parts = append(parts, fmt.Sprintf("partition %q", m.partition))
	}
	if m.state != "" {
		parts = append(parts, fmt.Sprintf("state %s", m.state))
	}
	if !m.scheduledAt.IsZero() {
		parts = append(parts, "scheduled at "+fmtTime(m.scheduledAt))
	}
	if m.payloadText != "" {
		parts = append(parts, m.payloadText)
	}
	return strings.Join(parts, ", ")
}

// check lists the store's jobs and compares the matches with what is wanted: exactly
// count (count > 0), at least one (count 0), or none (not).
func check(t tb, name string, store *headgate.Store, m matcher, count int, not bool) []*headgate.Job {
	t.Helper()
	ctx, cancel := opContext()
	defer cancel()
	all, err := listJobs(ctx, store)
	if err != nil {
		fatalf(t, "rqueuetest.%s: list the jobs of namespace %q: %v", name, store.Namespace(), err)
	}
	var hits []*headgate.Job
	for _, j := range all {
		if m.matches(j) {
			hits = append(hits, j)
		}
	}
	var want string
	switch {
	case not:
		if len(hits) == 0 {
			return nil
		}
		want = "no job with " + m.describe()
	case count > 0:
		if len(hits) == count {
			return hits
		}
		want = fmt.Sprintf("exactly %d %s with %s", count, plural(count, "job", "jobs"), m.describe())
	default:
		if len(hits) > 0 {
			return hits
		}
		want = "a job with " + m.describe()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rqueuetest.%s: want %s; %d of the %d %s in namespace %q match",
		name, want, len(hits), len(all), plural(len(all), "job", "jobs"), store.Namespace())
	if len(all) == 0 {
		b.WriteString("\n  the store is EMPTY: nothing was enqueued at all (or everything enqueued was deleted)")
	} else {
		b.WriteString("\n  what IS enqueued (* = matches):")
		// The matches first, so that the listing's cut never hides them.
		listed := slices.Concat(hits, slices.DeleteFunc(slices.Clone(all), m.matches))
		writeJobs(&b, listed, m.matches)
	}
	fatalf(t, "%s", b.String())
	return nil
}

// writeJobs lists up to maxListed jobs, one a line, marking those mark matches.
func writeJobs(b *strings.Builder, jobs []*headgate.Job, mark func(*headgate.Job) bool) {
	for _, j := range jobs[:min(len(jobs), maxListed)] {
		prefix := "    "
		if mark != nil {
			prefix = "      "
			if mark(j) {
				prefix = "    * "
			}
		}
		fmt.Fprintf(b, "\n%sid=%s kind=%q queue=%q partition=%q state=%s scheduled_at=%s payload=%s",
			prefix, j.ID, j.Kind, j.Queue, j.PartitionKey, j.State, fmtTime(j.ScheduledAt), renderPayload(j.Payload))
	}
	if len(jobs) > maxListed {
		fmt.Fprintf(b, "\n    ... and %d more", len(jobs)-maxListed)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxPayloadText bounds a payload as a failure message shows it.
const maxPayloadText = 200

// renderPayload shows a payload readably: a msgpack value as JSON, else printable text
// quoted, else hex.
func renderPayload(b []byte) string {
	if len(b) == 0 {
		return "(empty)"
	}
	if v, ok := decodeMsgpack(b); ok {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(jsonable(v)); err == nil {
			return truncate(strings.TrimSuffix(buf.String(), "\n"), maxPayloadText)
		}
	}
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) {
		return strconv.Quote(truncate(string(b), maxPayloadText))
	}
	if len(b) > maxPayloadText/2 {
		return "0x" + hex.EncodeToString(b[:maxPayloadText/2]) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return "0x" + hex.EncodeToString(b)
}

// decodeMsgpack decodes b as exactly one msgpack value.
func decodeMsgpack(b []byte) (any, bool) {
	r := bytes.NewReader(b)
	dec := msgpack.NewDecoder(r)
	dec.UseLooseInterfaceDecoding(true)
	dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	v, err := dec.DecodeInterfaceLoose()
	if err != nil || r.Len() != 0 {
		return nil, false
	}
	return v, true
}

// jsonable turns a decoded msgpack value into one encoding/json can encode.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jsonable(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = jsonable(e)
		}
		return s
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return "0x" + hex.EncodeToString(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
