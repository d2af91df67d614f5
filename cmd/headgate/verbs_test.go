package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate"
)

// runJSON runs a command with -json, which must exit with code, and decodes its stdout
// into v: one JSON document and nothing else.
func (b *testBundle) runJSON(t *testing.T, code int, v any, args ...string) {
	t.Helper()
	got, out, errOut := b.run(t, append(args, "-json")...)
	if got != code {
		t.Fatalf("headgate %s -json: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, out, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("headgate %s -json: %v\n%s", strings.Join(args, " "), err, out)
	}
	if dec.More() {
		t.Fatalf("headgate %s -json printed more than one document:\n%s", strings.Join(args, " "), out)
	}
}

type retriedJSON struct {
	ID          string  `json:"id"`
	State       string  `json:"state"`
	ScheduledAt *string `json:"scheduled_at"`
	Lifted      bool    `json:"lifted_quarantine"`
	Released    int     `json:"released_held"`
	Held        bool    `json:"held"`
}

type failedJSON struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

func TestRetryCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "a", Retention: time.Hour}, headgate.Envelope{ID: "b"}, headgate.Envelope{ID: "c"})
	for _, id := range []string{"a", "b"} {
		if err := b.store.Cancel(b.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	requireOutput(t, b.mustRun(t, "retry", "a"), "retried a: available 2030-01-02 03:04:05.000 UTC\n")
	var out struct {
		Retried []retriedJSON `json:"retried"`
		Failed  []failedJSON  `json:"failed"`
	}
	// c is available: not retryable; the command reports it and exits 1.
	b.runJSON(t, exitError, &out, "retry", "b", "c", "-at", "1h", "-keep-attempts")
	if len(out.Retried) != 1 || out.Retried[0].ID != "b" || out.Retried[0].State != "scheduled" ||
		out.Retried[0].ScheduledAt == nil || *out.Retried[0].ScheduledAt != "2030-01-02T04:04:05.000Z" {
		t.Errorf("retried %+v, want b scheduled at 04:04:05Z", out.Retried)
	}
	if len(out.Failed) != 1 || out.Failed[0].ID != "c" || !strings.Contains(out.Failed[0].Error, "only a finished job can be retried") {
		t.Errorf("failed %+v, want c not retryable", out.Failed)
	}
	if j, err := b.store.GetJob(b.ctx, "b"); err != nil || j.State != headgate.StateScheduled {
		t.Errorf("b after retry: %+v, %v", j, err)
	}
	if code, _, errOut := b.run(t, "retry", "a", "-at", "tomorrow"); code != exitUsage || !strings.Contains(errOut, "neither an RFC 3339 time") {
		t.Errorf("bad -at: exit %d, %s", code, errOut)
	}
}

// TestRetryCommandEdits: retry takes edit's flags and applies them with the retry; a
// finished job's edit names that command.
func TestRetryCommandEdits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "a", Retention: time.Hour})
	if err := b.store.Cancel(b.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := b.run(t, "edit", "a", "-priority", "1"); code != exitError ||
		!strings.Contains(errOut, "headgate retry a -payload") {
		t.Errorf("edit of a finished job: exit %d, %s; want it to name headgate retry", code, errOut)
	}
	var out struct {
		Retried []retriedJSON `json:"retried"`
		Failed  []failedJSON  `json:"failed"`
	}
	b.runJSON(t, exitOK, &out, "retry", "a", "-priority", "7", "-payload", `{"x":1}`, "-tags", "red,blue",
		"-set-partition", "t9", "-max-attempts", "3")
	if len(out.Retried) != 1 || out.Retried[0].ID != "a" || out.Retried[0].State != "available" || len(out.Failed) != 0 {
		t.Errorf("retry -json: %+v", out)
	}
	b.wantEdited(t, "a", headgate.StateAvailable)
	for _, args := range [][]string{{"retry", "a", "-priority", "x"}, {"retry", "-state", "cancelled", "-priority", "1"}} {
		if code, _, _ := b.run(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// wantEdited checks that job id has the fields the edit tests give it, and state.
func (b *testBundle) wantEdited(t *testing.T, id string, state headgate.State) {
	t.Helper()
	j, err := b.store.GetJob(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var args struct {
		X int `msgpack:"x"`
	}
	if err := msgpack.Unmarshal(j.Payload, &args); err != nil || args.X != 1 {
		t.Errorf("edited payload %q: %+v, %v", j.Payload, args, err)
	}
	if j.Priority != 7 || strings.Join(j.Tags, ",") != "blue,red" ||
		j.PartitionKey != "t9" || j.MaxAttempts != 3 || j.State != state {
		t.Errorf("edited job: %+v, want %s", j, state)
	}
}

func TestEditCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "a"})
	var out struct {
		ID          string  `json:"id"`
		State       string  `json:"state"`
		ScheduledAt *string `json:"scheduled_at"`
	}
	b.runJSON(t, exitOK, &out, "edit", "a", "-priority", "7", "-payload", `{"x":1}`, "-tags", "red,blue",
		"-partition", "t9", "-max-attempts", "3", "-at", "2030-01-02T05:00:00Z")
	if out.ID != "a" || out.State != "scheduled" || out.ScheduledAt == nil || *out.ScheduledAt != "2030-01-02T05:00:00.000Z" {
		t.Errorf("edit -json: %+v", out)
	}
	b.wantEdited(t, "a", headgate.StateScheduled)
	requireOutput(t, b.mustRun(t, "edit", "a", "-tags", ""), "edited a: scheduled 2030-01-02 05:00:00.000 UTC\n")
	for _, args := range [][]string{{"edit", "a"}, {"edit", "a", "-payload", "{"}, {"edit", "a", "-priority", "x"}, {"edit"}} {
		if code, _, _ := b.run(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	// A value the store refuses is named by its flag, not by the field of the edit.
	before := b.dump(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"edit", "a", "-max-attempts", "0"}, "headgate edit: -max-attempts is 0, outside 1..9007199254740991"},
		{[]string{"edit", "a", "-partition", "{t}"}, `headgate edit: -partition "{t}" contains a brace`},
		{[]string{"edit", "a", "-tags", "x,,y"}, "headgate edit: -tags: a tag is empty"},
		{[]string{"retry", "a", "-set-partition", "{t}"}, `headgate retry: -set-partition "{t}" contains a brace`},
		{[]string{"retry", "a", "-max-attempts", "0", "-json"}, "headgate retry: -max-attempts is 0, outside 1..9007199254740991"},
	} {
		if code, out, errOut := b.run(t, tc.args...); code != exitUsage || out != "" || !strings.HasPrefix(errOut, tc.want+"\n") {
			t.Errorf("headgate %v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errOut, exitUsage, tc.want)
		}
	}
	if after := b.dump(t); after != before {
		t.Errorf("refused edits changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// A running job is refused.
	b.enqueue(t, headgate.Envelope{ID: "r"})
	b.admit(t, headgate.QueueDefault, 1, 1, time.Minute)
	if code, _, errOut := b.run(t, "edit", "r", "-priority", "1"); code != exitError || !strings.Contains(errOut,
		`job "r" is running; edit it once its attempt ends, or cancel it and retry it with the edit`) {
		t.Errorf("edit running: exit %d, %s", code, errOut)
	}
}

func TestDeleteCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "a"}, headgate.Envelope{ID: "b", Pending: true})
	requireOutput(t, b.mustRun(t, "delete", "a"), "deleted a (was available)\n")
	var out struct {
		Deleted []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"deleted"`
		Failed []failedJSON `json:"failed"`
	}
	b.runJSON(t, exitError, &out, "delete", "b", "a")
	if len(out.Deleted) != 1 || out.Deleted[0].ID != "b" || out.Deleted[0].State != "pending" {
		t.Errorf("deleted %+v, want b (pending)", out.Deleted)
	}
	if len(out.Failed) != 1 || out.Failed[0].ID != "a" || !strings.Contains(out.Failed[0].Error, "not found") {
		t.Errorf("failed %+v, want a not found", out.Failed)
	}
	if _, err := b.store.GetJob(b.ctx, "b"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Errorf("b after delete: %v", err)
	}
}

func TestQuarantineReleaseRetry(t *testing.T) {
	t.Parallel()
	b := setup(t) // crash limit 1
	b.quarantined(t, headgate.Envelope{ID: "sibling", Fingerprint: "fp"})
	// Admission sets the sibling aside.
	b.admit(t, headgate.QueueDefault, 1, 0, time.Second)
	var list struct {
		Quarantined []struct {
			Fingerprint string `json:"fingerprint"`
			JobID       string `json:"job_id"`
			Held        int64  `json:"held"`
		} `json:"quarantined"`
	}
	b.runJSON(t, exitOK, &list, "quarantine")
	if len(list.Quarantined) != 1 || list.Quarantined[0].JobID != "crasher" || list.Quarantined[0].Held != 1 {
		t.Errorf("quarantine -json: %+v", list)
	}
	var out struct {
		Fingerprint string       `json:"fingerprint"`
		Released    int          `json:"released_held"`
		Retried     *retriedJSON `json:"retried"`
	}
	// Refused by the queue's limit (the held sibling fills it), the retry leaves the
	// fingerprint quarantined, and the command says so.
	b.mustRun(t, "limit", "default", "1")
	before := b.dump(t)
	if code, stdout, errOut := b.run(t, "quarantine", "release", "fp", "-retry"); code != exitError || stdout != "" ||
		!strings.Contains(errOut, "fingerprint fp stays quarantined, nothing released or retried: headgate: queue \"default\" is full") {
		t.Errorf("release -retry into a full queue: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	if after := b.dump(t); after != before {
		t.Errorf("a refused release -retry changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	b.mustRun(t, "limit", "default", "off")
	b.runJSON(t, exitOK, &out, "quarantine", "release", "fp", "-retry")
	if out.Fingerprint != "fp" || out.Released != 1 || out.Retried == nil || out.Retried.ID != "crasher" ||
		out.Retried.State != "available" || !out.Retried.Lifted {
		t.Errorf("release -retry -json: %+v (retried %+v)", out, out.Retried)
	}
	if j, err := b.store.GetJob(b.ctx, "crasher"); err != nil || j.State != headgate.StateAvailable || j.Held || j.CrashAttempt != 0 {
		t.Errorf("crasher after release -retry: %+v, %v", j, err)
	}
	// Released, the fingerprint is no longer quarantined: a second release is refused.
	if code, _, errOut := b.run(t, "quarantine", "release", "fp", "-retry"); code != exitError ||
		!strings.Contains(errOut, `fingerprint "fp" is not quarantined`) {
		t.Errorf("second release -retry: exit %d, %s", code, errOut)
	}
	if code, _, _ := b.run(t, "quarantine", "-retry"); code != exitUsage {
		t.Errorf("quarantine -retry without release: exit %d", code)
	}
}

// TestEditPayloadEncodesMsgpack: -payload takes JSON and stores the msgpack a worker
// decodes (payloads are msgpack.Marshal(args), see worker.Handle), so an edited job
// runs with the new args instead of being parked as undecodable.
func TestEditPayloadEncodesMsgpack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old, err := msgpack.Marshal(map[string]any{"to": "ada@example.com", "n": 1})
	if err != nil {
		t.Fatal(err)
	}
	b.enqueue(t, headgate.Envelope{ID: "a", Kind: "email", Payload: old})
	b.mustRun(t, "edit", "a", "-payload", `{"to":"bob@example.com","n":42,"big":18446744073709551615,"f":1.5,"tags":["x"],"none":null}`)
	j, err := b.store.GetJob(b.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var args struct {
		To   string   `msgpack:"to"`
		N    int      `msgpack:"n"`
		Big  uint64   `msgpack:"big"`
		F    float64  `msgpack:"f"`
		Tags []string `msgpack:"tags"`
		None *string  `msgpack:"none"`
	}
	if err := msgpack.Unmarshal(j.Payload, &args); err != nil {
		t.Fatalf("the edited payload %q does not decode as msgpack: %v", j.Payload, err)
	}
	if args.To != "bob@example.com" || args.N != 42 || args.Big != 18446744073709551615 || args.F != 1.5 ||
		len(args.Tags) != 1 || args.Tags[0] != "x" || args.None != nil {
		t.Errorf("edited args: %+v", args)
	}
	if out := b.mustRun(t, "job", "a"); !strings.Contains(out, `"to":"bob@example.com"`) {
		t.Errorf("job a after the edit:\n%s", out)
	}
}

// TestCancelByIDJSON: cancel by id takes -json like retry and delete by id: one document
// with the jobs cancelled and those refused, exit 1 when any was refused.
func TestCancelByIDJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "a"}, headgate.Envelope{ID: "b"})
	var out struct {
		Cancelled []struct {
			ID string `json:"id"`
		} `json:"cancelled"`
		Failed []failedJSON `json:"failed"`
	}
	b.runJSON(t, exitError, &out, "cancel", "a", "nope")
	if len(out.Cancelled) != 1 || out.Cancelled[0].ID != "a" {
		t.Errorf("cancelled %+v, want a", out.Cancelled)
	}
	if len(out.Failed) != 1 || out.Failed[0].ID != "nope" || !strings.Contains(out.Failed[0].Error, "not found") {
		t.Errorf("failed %+v, want nope not found", out.Failed)
	}
	if j, err := b.store.GetJob(b.ctx, "a"); err != nil || j.State != headgate.StateCancelled {
		t.Errorf("a after cancel -json: %+v, %v", j, err)
	}
	b.runJSON(t, exitOK, &out, "cancel", "b")
	if len(out.Cancelled) != 1 || out.Cancelled[0].ID != "b" || len(out.Failed) != 0 {
		t.Errorf("cancel b -json: %+v", out)
	}
}

// TestQuarantineReleaseUnknownFingerprint: releasing a fingerprint that is not
// quarantined (a typo) said "released" and exited 0, while the one meant stayed
// quarantined. It is an error now, with or without -retry and -json.
func TestQuarantineReleaseUnknownFingerprint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, args := range [][]string{{"quarantine", "release", "nope"}, {"quarantine", "release", "nope", "-retry"},
		{"quarantine", "release", "nope", "-json"}} {
		code, out, errOut := b.run(t, args...)
		if code != exitError || out != "" || !strings.Contains(errOut, `fingerprint "nope" is not quarantined`) {
			t.Errorf("headgate %v: exit %d, stdout %q, stderr %q; want exit %d and not quarantined", args, code, out, errOut, exitError)
		}
	}
}

// TestEditPayloadKeepsJSONPayloads: a job whose payload is JSON text (enqueued through
// the Store by a program whose handlers read JSON) gets the new payload as JSON text too:
// -payload follows the encoding the job has.
func TestEditPayloadKeepsJSONPayloads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "a", Payload: []byte(`{"n":1}`)})
	b.mustRun(t, "edit", "a", "-payload", `{"n": 2}`)
	if j, err := b.store.GetJob(b.ctx, "a"); err != nil || string(j.Payload) != `{"n": 2}` {
		t.Errorf("edited JSON payload: %+v, %v; want the JSON as given", j, err)
	}
	b.mustRun(t, "cron", "add", "c", "-every", "1h", "-kind", "test")
	sc, err := b.store.GetSchedule(b.ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	sc.Job.Payload = []byte(`{"full":true}`)
	if _, err := b.store.UpdateSchedule(b.ctx, sc.Schedule); err != nil {
		t.Fatal(err)
	}
	b.mustRun(t, "cron", "update", "c", "-payload", `{"full":false}`)
	if sc, err := b.store.GetSchedule(b.ctx, "c"); err != nil || string(sc.Job.Payload) != `{"full":false}` {
		t.Errorf("updated JSON payload of a schedule: %+v, %v", sc, err)
	}
}

// quarantined makes job crasher of fingerprint fp quarantined (the bundle's crash limit
// is 1), with others enqueued beside it, admitted after it.
func (b *testBundle) quarantined(t *testing.T, others ...headgate.Envelope) {
	t.Helper()
	b.quarantinedIn(t, headgate.QueueDefault, "fp", others...)
}

// quarantinedIn is quarantined with the crasher in queue and of fingerprint fp.
func (b *testBundle) quarantinedIn(t *testing.T, queue, fp string, others ...headgate.Envelope) {
	t.Helper()
	b.enqueue(t, append([]headgate.Envelope{{ID: "crasher", Queue: queue, Fingerprint: fp, Priority: 1}}, others...)...)
	b.admit(t, queue, 1, 1, time.Second)
	if err := b.store.AdvanceClock(b.ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if r, err := b.store.ReclaimExpired(b.ctx, 10); err != nil || len(r) != 1 || !r[0].Quarantined {
		t.Fatalf("reclaim: %+v, %v", r, err)
	}
}

// TestRetryHeldSaysSo: a quarantined job retried by id while its fingerprint stays
// quarantined is available but held; the command said "available" alone, and the
// operator waited for a job that would not run.
func TestRetryHeldSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.quarantined(t)
	requireOutput(t, b.mustRun(t, "retry", "crasher"),
		"retried crasher: available, held while its fingerprint fp is quarantined (headgate quarantine release fp)\n")
	b = setup(t)
	b.quarantined(t)
	var out struct {
		Retried []retriedJSON `json:"retried"`
		Failed  []failedJSON  `json:"failed"`
	}
	b.runJSON(t, exitOK, &out, "retry", "crasher")
	if len(out.Retried) != 1 || out.Retried[0].State != "available" || !out.Retried[0].Held || out.Retried[0].Lifted {
		t.Errorf("retry -json of a job held by its fingerprint: %+v", out)
	}
	if j, err := b.store.GetJob(b.ctx, "crasher"); err != nil || !j.Held {
		t.Errorf("crasher after the retry: %+v, %v; want it held", j, err)
	}
}

// The way out of a job parked as corrupt that the command prints works: a delete parks it
// again while its data is unusable; repaired, it is deleted and no longer listed.
func TestCorruptJobRepairedThenDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "bad", Kind: "email", Queue: "mail"})
	key := "hg:{" + testNS + "}:job:bad"
	if err := b.store.Client().HSet(b.ctx, key, "prio", "high").Err(); err != nil {
		t.Fatal(err)
	}
	requireContains(t, b.mustRun(t, "why", "bad"), "repair what its reason names in Redis, then headgate delete bad")
	if code, _, errOut := b.run(t, "delete", "bad"); code != exitError || !strings.Contains(errOut, "parked") {
		t.Errorf("delete of a job with unusable data: exit %d, stderr %q", code, errOut)
	}
	requireContains(t, b.mustRun(t, "corrupt"), "bad", "prio", "repair what its reason names in Redis, then headgate delete ID")
	if err := b.store.Client().HSet(b.ctx, key, "prio", "0").Err(); err != nil {
		t.Fatal(err)
	}
	requireOutput(t, b.mustRun(t, "delete", "bad"), "deleted bad (was available)\n")
	requireOutput(t, b.mustRun(t, "corrupt"), "no corrupt jobs\n")
}

// TestBulkRetryHeldSaysSo: quarantined jobs retried by filter while their fingerprint
// stays quarantined are available but held, which the run says, as a retry by id does.
func TestBulkRetryHeldSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.quarantined(t)
	requireOutput(t, b.mustRun(t, "retry", "-state", "quarantined"), `
1 job(s) retried, 0 skipped, in 1 batch(es)
held: a retried job whose fingerprint is still quarantined waits with its siblings (1 fingerprint(s) quarantined: headgate quarantine); headgate quarantine release FP lets them run
`)
	if j, err := b.store.GetJob(b.ctx, "crasher"); err != nil || j.State != headgate.StateAvailable || !j.Held {
		t.Errorf("crasher after retry: %+v, %v; want available and held", j, err)
	}
}

// An id given twice to cancel, retry or delete is one job: the verb acts on it once and
// reports no failure for the copy.
func TestVerbsTakeAnIDOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "mail"})
	for _, tc := range []struct{ verb, want string }{
		{"cancel", "cancelled j\n"},
		{"retry", "retried j: available 2030-01-02 03:04:05.000 UTC\n"},
		{"delete", "deleted j (was available)\n"},
	} {
		code, out, errOut := b.run(t, tc.verb, "j", "j")
		if code != exitOK || out != tc.want {
			t.Errorf("%s j j: exit %d, stdout %q, stderr %q; want exit 0 and %q", tc.verb, code, out, errOut, tc.want)
		}
	}
}
