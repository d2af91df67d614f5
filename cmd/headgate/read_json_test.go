package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// Every read command's -json output parses back into its document with no field left
// over, and holds the namespace's known state.
func TestReadCommandsJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t,
		headgate.Envelope{ID: "j1", Kind: "email", Queue: "mail", PartitionKey: "tenant-1", Priority: 3,
			Tags: []string{"welcome"}, Payload: []byte{0x80}, RateClass: "smtp"},
		headgate.Envelope{ID: "j2", Kind: "email", Queue: "mail", ScheduledAt: epoch.Add(time.Hour)},
		headgate.Envelope{ID: "bad", Kind: "email", Queue: "other"},
	)
	if err := b.store.SetRateLimit(b.ctx, "smtp", headgate.RateLimit{Limit: 10, Window: time.Second, Burst: 20}); err != nil {
		t.Fatal(err)
	}
	b.mustRun(t, "limit", "mail", "5")
	// A job whose attempt count is not a number is parked by the next admission.
	if err := b.store.Client().HSet(b.ctx, "hg:{"+testNS+"}:job:bad", "attempt", "many").Err(); err != nil {
		t.Fatal(err)
	}
	b.admit(t, "other", 1, 0, time.Minute)

	var stats statsJSON
	b.runJSON(t, exitOK, &stats, "stats")
	if stats.Namespace != testNS || stats.Now == nil || *stats.Now != "2030-01-02T03:04:05.000Z" || len(stats.Queues) != 2 {
		t.Fatalf("stats -json = %+v", stats)
	}
	mail := stats.Queues[0]
	if mail.Queue != "mail" || mail.Limit == nil || *mail.Limit != 5 || mail.Unfinished != 2 ||
		mail.Counts["available"] != 1 || mail.Counts["scheduled"] != 1 || len(mail.Counts) != len(headgate.States) ||
		mail.LastHour != nil { // no series sampled
		t.Errorf("stats -json mail = %+v", mail)
	}

	var jobs jobsJSON
	b.runJSON(t, exitOK, &jobs, "jobs", "-queue", "mail", "-state", "available")
	slices.SortFunc(jobs.Jobs, func(a, b jobJSON) int { return strings.Compare(a.ID, b.ID) })
	if len(jobs.Jobs) != 1 || jobs.Next != nil {
		t.Fatalf("jobs -json = %+v", jobs)
	}
	if j := jobs.Jobs[0]; j.ID != "j1" || j.State != "available" || j.Partition != "tenant-1" || j.Priority != 3 ||
		!slices.Equal(j.Tags, []string{"welcome"}) || string(j.Payload) != "\x80" || j.RateClass != "smtp" ||
		j.ScheduledAt == nil || *j.ScheduledAt != "2030-01-02T03:04:05.000Z" || j.FinalizedAt != nil {
		t.Errorf("jobs -json j1 = %+v", j)
	}

	var job jobDetailJSON
	b.runJSON(t, exitOK, &job, "job", "j2")
	if job.Job.ID != "j2" || job.Job.State != "scheduled" || *job.Job.ScheduledAt != "2030-01-02T04:04:05.000Z" ||
		job.Progress != nil || job.Result != nil || job.Output != nil || len(job.Errors) != 0 {
		t.Errorf("job -json = %+v", job)
	}

	var rate rateJSON
	b.runJSON(t, exitOK, &rate, "rate", "smtp")
	if !rate.Limited || *rate.Limit != 10 || *rate.WindowMS != 1000 || *rate.Burst != 20 || *rate.Tokens != 20 ||
		*rate.At != "2030-01-02T03:04:05.000Z" {
		t.Errorf("rate -json = %+v", rate)
	}
	b.runJSON(t, exitOK, &rate, "rate", "none")
	if rate.Limited || rate.Limit != nil || rate.Tokens != nil {
		t.Errorf("rate -json of an unlimited class = %+v", rate)
	}

	var corrupt struct {
		Corrupt []struct {
			ID     string `json:"id"`
			Reason string `json:"reason"`
		} `json:"corrupt"`
	}
	b.runJSON(t, exitOK, &corrupt, "corrupt")
	if len(corrupt.Corrupt) != 1 || corrupt.Corrupt[0].ID != "bad" || !strings.Contains(corrupt.Corrupt[0].Reason, "attempt") {
		t.Errorf("corrupt -json = %+v", corrupt)
	}
	requireContains(t, b.mustRun(t, "corrupt"), "bad", "attempt")
	// The parked job's own document and table say it is parked, beside the state it had.
	b.runJSON(t, exitOK, &job, "job", "bad")
	if job.Job.ID != "bad" || job.Corrupt == nil || !strings.Contains(*job.Corrupt, "attempt") {
		t.Errorf("job -json of a parked job = %+v, want its corrupt reason", job)
	}
	requireContains(t, b.mustRun(t, "job", "bad"), "(parked as corrupt: it will not run)", "Corrupt:", "attempt is not an integer")
	b.runJSON(t, exitOK, &job, "job", "j2")
	if job.Corrupt != nil {
		t.Errorf("job -json of a job that is not parked: corrupt %q, want null", *job.Corrupt)
	}

	var quarantine struct {
		Quarantined []struct {
			Fingerprint string `json:"fingerprint"`
			JobID       string `json:"job_id"`
			Held        int64  `json:"held"`
		} `json:"quarantined"`
	}
	b.runJSON(t, exitOK, &quarantine, "quarantine")
	if len(quarantine.Quarantined) != 0 {
		t.Errorf("quarantine -json = %+v", quarantine)
	}

	var policy struct {
		Policy map[string]int64 `json:"policy"`
		Stored []string         `json:"stored"`
	}
	b.runJSON(t, exitOK, &policy, "policy")
	if len(policy.Policy) != len(headgate.PolicyFields) {
		t.Errorf("policy -json = %+v", policy)
	}
}

// jsonFields runs the command with -json and returns its document's fields as they were
// printed, failing the test unless it exits with code and the document has exactly keys.
func (b *testBundle) jsonFields(t *testing.T, code int, keys []string, args ...string) map[string]string {
	t.Helper()
	got, out, errOut := b.run(t, append(args, "-json")...)
	if got != code {
		t.Fatalf("headgate %s -json: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, out, errOut)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("headgate %s -json: %v\n%s", strings.Join(args, " "), err, out)
	}
	fields := map[string]string{}
	for k, v := range doc {
		fields[k] = string(v)
	}
	if have := slices.Sorted(maps.Keys(fields)); !slices.Equal(have, slices.Sorted(slices.Values(keys))) {
		t.Errorf("headgate %s -json has the fields %v, want %v:\n%s", strings.Join(args, " "), have, keys, out)
	}
	return fields
}

// Every field README lists of a -json document is present, null when it has no value:
// "no next page" is null in jobs, wf list and wf deployments alike (jobs said ""), and
// the document of a run by filter has its error (null unless the run stopped) and its
// cursor (null when there is none to resume from).
func TestJSONFieldsAlwaysPresent(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, b *testBundle) {
		b.enqueue(t, headgate.Envelope{ID: "a", Queue: "mail"}, headgate.Envelope{ID: "b", Queue: "mail"})
		page := []string{"jobs", "next"}
		first := b.jsonFields(t, exitOK, page, "jobs", "-queue", "mail", "-state", "available", "-limit", "1")
		var cursor string
		if err := json.Unmarshal([]byte(first["next"]), &cursor); err != nil || cursor == "" {
			t.Fatalf("jobs -limit 1 -json: next %s, want the cursor of the next page (%v)", first["next"], err)
		}
		last := b.jsonFields(t, exitOK, page, "jobs", "-queue", "mail", "-state", "available", "-limit", "1", "-cursor", cursor)
		if last["next"] != "null" {
			t.Errorf("jobs -json of the last page: next %s, want null", last["next"])
		}
		if wf := b.jsonFields(t, exitOK, []string{"workflows", "next"}, "wf", "list"); wf["next"] != "null" || wf["workflows"] != "[]" {
			t.Errorf("wf list -json = %v, want no workflows and next null", wf)
		}
		if d := b.jsonFields(t, exitOK, []string{"deployments", "undecodable", "next"}, "wf", "deployments"); d["next"] != "null" {
			t.Errorf("wf deployments -json = %v, want next null", d)
		}

		bulk := []string{"verb", "dry_run", "moved", "skipped", "batches", "cursor", "error"}
		done := b.jsonFields(t, exitOK, bulk, "cancel", "-queue", "mail", "-state", "available")
		if done["moved"] != "2" || done["cursor"] != "null" || done["error"] != "null" {
			t.Errorf("cancel by filter -json = %v, want 2 moved, cursor and error null", done)
		}
		b.mustRun(t, "limit", "mail", "1")
		stopped := b.jsonFields(t, exitError, bulk, "retry", "-queue", "mail", "-state", "cancelled")
		var msg string
		if err := json.Unmarshal([]byte(stopped["error"]), &msg); err != nil || !strings.Contains(msg, "is full") ||
			stopped["moved"] != "0" || stopped["cursor"] != "null" {
			t.Errorf("retry by filter refused by the limit -json = %v, want the error, nothing moved and cursor null "+
				"(the same command runs it again)", stopped)
		}
	})
}

// The human output of rate CLASS and of a job marks its times with their zone.
func TestReadCommandsTimeZone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "mail"})
	if err := b.store.SetRateLimit(b.ctx, "smtp", headgate.RateLimit{Limit: 1, Window: time.Minute, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	requireOutput(t, b.mustRun(t, "rate", "smtp"),
		"rate class smtp: 1 per 1m, burst 2; 2 token(s) at 2030-01-02 03:04:05 UTC\n0 job(s) set aside now, 0 in all\n")
	requireContains(t, b.mustRun(t, "job", "j"), "Created:      2030-01-02 03:04:05.000 UTC (now)")
}

// An operator write is logged once on the command's stderr (the inspector's audit line),
// its time in RFC 3339 with its zone, as every time the command prints.
func TestOperatorWriteLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "mail"})
	code, out, errOut := b.run(t, "pause", "mail")
	line := regexp.MustCompile(`^time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d) level=INFO msg="queue paused" namespace=cli-test queue=mail\n$`)
	if code != exitOK || out != "paused queue mail: running jobs finish, new jobs wait\n" || !line.MatchString(errOut) {
		t.Errorf("pause mail: exit %d, stdout %q, stderr %q; want the audit line, matching %s", code, out, errOut, line)
	}
}

// An operator write that changed nothing logs no audit line on stderr: a release of no
// pending job, a second rate CLASS off, limit off of an unbounded queue, cron pause of a
// paused schedule. The same writes that change something log theirs.
func TestNoOpWriteNotLogged(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, b *testBundle) {
		b.enqueue(t, headgate.Envelope{ID: "ready", Queue: "q"}, headgate.Envelope{ID: "staged", Queue: "q", Pending: true})
		b.mustRun(t, "cron", "add", "nightly", "-cron", "@daily", "-kind", "report")
		b.mustRun(t, "rate", "smtp", "10", "1s", "20")
		for _, tc := range []struct {
			args []string
			code int
			msg  string // the audit line's message; "" for none
		}{
			{[]string{"release", "ready"}, exitError, ""},
			{[]string{"release", "staged"}, exitOK, "pending jobs released"},
			{[]string{"rate", "smtp", "off"}, exitOK, "rate limit removed"},
			{[]string{"rate", "smtp", "off"}, exitOK, ""},
			{[]string{"limit", "q", "off"}, exitOK, ""},
			{[]string{"limit", "q", "3"}, exitOK, "enqueue limit set"},
			{[]string{"limit", "q", "3"}, exitOK, ""},
			{[]string{"limit", "q", "off"}, exitOK, "enqueue limit removed"},
			{[]string{"cron", "pause", "nightly"}, exitOK, "schedule paused"},
			{[]string{"cron", "pause", "nightly"}, exitOK, ""},
		} {
			code, out, errOut := b.run(t, tc.args...)
			logged := strings.Count(errOut, " level=INFO ")
			switch {
			case code != tc.code:
				t.Errorf("%s: exit %d, want %d\nstdout %q\nstderr %q", tc.args, code, tc.code, out, errOut)
			case tc.msg == "" && logged != 0:
				t.Errorf("%s changed nothing and logged:\n%s", tc.args, errOut)
			case tc.msg != "" && (logged != 1 || !strings.Contains(errOut, fmt.Sprintf(" level=INFO msg=%q ", tc.msg))):
				t.Errorf("%s: stderr %q, want one audit line %q", tc.args, errOut, tc.msg)
			}
		}
	})
}

// pause, resume and limit of a queue the namespace does not know warn and write
// nothing, unless -create is given: a mistyped name must not be reported paused or
// bounded while the real queue is not.
func TestPauseUnknownQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "mail"})
	before := b.dump(t)
	for _, verb := range [][]string{{"pause"}, {"resume"}, {"limit", "5"}, {"limit", "off"}} {
		code, out, errOut := b.run(t, append([]string{verb[0], "mial"}, verb[1:]...)...)
		if code != exitError || out != "" || !strings.Contains(errOut, `warning: namespace cli-test has no queue "mial"`) ||
			!strings.Contains(errOut, "-create") {
			t.Errorf("%s of an unknown queue: exit %d, stdout %q, stderr %q; want exit 1 and a warning", verb, code, out, errOut)
		}
		if after := b.dump(t); after != before {
			t.Errorf("%s of an unknown queue changed the namespace:\nbefore:\n%s\nafter:\n%s", verb, before, after)
		}
	}
	requireOutput(t, b.mustRun(t, "pause", "mail"), "paused queue mail: running jobs finish, new jobs wait\n")
	requireOutput(t, b.mustRun(t, "pause", "later", "-create"), "paused queue later: running jobs finish, new jobs wait\n")
	// A paused queue is known: resuming it needs no -create, and leaves nothing behind.
	requireOutput(t, b.mustRun(t, "resume", "later"), "resumed queue later\n")
	requireOutput(t, b.mustRun(t, "limit", "mail", "5"), "queue mail accepts at most 5 unfinished jobs\n")
	requireOutput(t, b.mustRun(t, "limit", "mail", "off"), "queue mail is unbounded\n")
	requireOutput(t, b.mustRun(t, "limit", "bound", "3", "-create"), "queue bound accepts at most 3 unfinished jobs\n")
	requireOutput(t, b.mustRun(t, "limit", "bound", "off"), "queue bound is unbounded\n")
	var stats statsJSON
	b.runJSON(t, exitOK, &stats, "stats")
	if len(stats.Queues) != 1 || stats.Queues[0].Queue != "mail" || !stats.Queues[0].Paused {
		t.Errorf("stats after the pauses = %+v, want mail alone, paused", stats.Queues)
	}
}

// Every -json time is in UTC whatever the machine's zone (the store's times come in the
// local one), so a document reads the same from every host, as why's and workers' do.
func TestJSONTimeInUTC(t *testing.T) {
	t.Parallel()
	local := time.Date(2030, 1, 2, 8, 34, 5, 7e6, time.FixedZone("IST", 5*3600+1800))
	if got := jsonTime(local); got == nil || *got != "2030-01-02T03:04:05.007Z" {
		t.Errorf("jsonTime(%s) = %v, want 2030-01-02T03:04:05.007Z", local, got)
	}
	if got := jsonTime(time.Time{}); got != nil {
		t.Errorf("jsonTime of no time = %q, want null", *got)
	}
}
