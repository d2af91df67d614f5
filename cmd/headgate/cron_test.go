package main

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

func TestCronCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// No schedule yet: said so, as the other listings say it, not a header over nothing.
	requireOutput(t, b.mustRun(t, "cron", "list"), "namespace cli-test has no schedules\n")
	requireOutput(t, b.mustRun(t, "cron", "add", "nightly", "-cron", "30 2 * * *", "-zone", "Europe/Berlin", "-kind", "report",
		"-payload", `{"full":true}`, "-queue", "reports", "-tags", "b,a", "-misfire", "catch_up", "-catch-up-max", "3",
		"-catch-up-window", "6h"),
		"added schedule nightly (revision 1), next due 2030-01-03 01:30:00 UTC\n") // 02:30 in Berlin, not the add
	var st scheduleJSON
	b.runJSON(t, exitOK, &st, "cron", "update", "nightly", "-cron", "0 3 * * *", "-zone", "Europe/Berlin", "-kind", "report", "-priority", "4")
	if st.Revision != 2 || st.Cron == nil || *st.Cron != "0 3 * * *" || st.Job.Priority != 4 || st.Misfire.Policy != "catch_up" || st.Zone != "Europe/Berlin" { // what update does not name stays
		t.Errorf("update -json: %+v", st)
	}
	if st.Misfire.Window == nil || *st.Misfire.Window != 6*3600*1000 || st.Misfire.Grace <= 0 || st.Interval != nil { // milliseconds, as policy -json
		t.Errorf("update -json durations: interval %v, grace %d, window %v; want null, > 0, 21600000", st.Interval, st.Misfire.Grace, st.Misfire.Window)
	}
	var every map[string]any
	b.runJSON(t, exitOK, &every, "cron", "add", "tick", "-every", "5s", "-kind", "report", "-grace", "2m")
	if misfire, _ := every["misfire"].(map[string]any); every["interval_ms"] != 5000.0 || misfire == nil || misfire["grace_ms"] != 120000.0 {
		t.Errorf("add -every 5s -grace 2m -json: %v; want interval_ms 5000 and misfire.grace_ms 120000", every)
	}
	requireOutput(t, b.mustRun(t, "cron", "remove", "tick"), "removed schedule tick\n")
	var paused struct {
		Name    string `json:"name"`
		Changed bool   `json:"changed"`
	}
	b.runJSON(t, exitOK, &paused, "cron", "pause", "nightly")
	if !paused.Changed {
		t.Errorf("pause: %+v", paused)
	}
	requireOutput(t, b.mustRun(t, "cron", "pause", "nightly"), "schedule nightly was paused already\n")
	var run struct {
		Name     string `json:"name"`
		JobID    string `json:"job_id"`
		Replayed bool   `json:"replayed"`
	}
	b.runJSON(t, exitOK, &run, "cron", "run-now", "nightly")
	if run.JobID != "cron:nightly:run:"+strconv.FormatInt(epoch.UnixMilli(), 10) || run.Replayed {
		t.Errorf("run-now: %+v", run)
	}
	if j, err := b.store.GetJob(b.ctx, run.JobID); err != nil || j.Kind != "report" || j.Priority != 4 {
		t.Errorf("run-now job: %+v, %v", j, err)
	}
	requireOutput(t, b.mustRun(t, "cron", "add", "hourly", "-cron", "@hourly", "-kind", "report"),
		"added schedule hourly (revision 1), next due 2030-01-02 04:00:00 UTC\n")
	var hourly scheduleJSON
	b.runJSON(t, exitOK, &hourly, "cron", "update", "hourly", "-cron", "@hourly", "-kind", "report")
	if hourly.NextTick == nil || *hourly.NextTick != "2030-01-02T04:00:00.000Z" || hourly.NextDue == nil ||
		*hourly.NextDue != "2030-01-02T03:04:05.000Z" {
		t.Errorf("update -json: next tick %v, next due %v; want 04:00 and the update's 03:04:05", hourly.NextTick, hourly.NextDue)
	}
	if out := b.mustRun(t, "cron", "list"); !strings.Contains(out, "hourly   @hourly    UTC            fire_once  active  2030-01-02 04:00:00 UTC") {
		t.Errorf("list shows the next tick as NEXT DUE:\n%s", out)
	}
	requireOutput(t, b.mustRun(t, "cron", "remove", "hourly"), "removed schedule hourly\n")
	out := b.mustRun(t, "cron", "list")
	if !strings.Contains(out, "nightly  0 3 * * *  Europe/Berlin  catch_up  paused") {
		t.Errorf("list:\n%s", out)
	}
	var list struct {
		Schedules []scheduleJSON `json:"schedules"`
	}
	b.runJSON(t, exitOK, &list, "cron", "list")
	if len(list.Schedules) != 1 || list.Schedules[0].Runs != 1 || !list.Schedules[0].Paused || list.Schedules[0].NextDue != nil {
		t.Errorf("list -json: %+v", list)
	}
	requireOutput(t, b.mustRun(t, "cron", "resume", "nightly"), "schedule nightly is active\n")
	requireOutput(t, b.mustRun(t, "cron", "remove", "nightly"), "removed schedule nightly\n")
	if _, err := b.store.GetSchedule(b.ctx, "nightly"); err == nil {
		t.Errorf("the schedule is still there after remove")
	}

	// Mistakes: a bad definition, a missing verb or name are usage errors (exit 2); a
	// schedule that is not there is an error (exit 1).
	if code, _, errOut := b.run(t, "cron", "add", "x", "-cron", "61 * * * *", "-kind", "k"); code != exitUsage ||
		!strings.HasPrefix(errOut, `headgate cron: -cron "61 * * * *": `) {
		t.Errorf("bad expression: exit %d, %s", code, errOut)
	}
	if code, _, errOut := b.run(t, "cron", "remove", "nightly"); code != exitError || !strings.Contains(errOut, "schedule not found") {
		t.Errorf("remove of a removed schedule: exit %d, %s", code, errOut)
	}
	for _, args := range [][]string{{"cron"}, {"cron", "pause"}, {"cron", "fly", "x"}, {"cron", "add", "x", "-every", "soon"}} {
		if code, _, _ := b.run(t, args...); code != exitUsage {
			t.Errorf("headgate %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	}
	if _, err := b.store.GetSchedule(b.ctx, "x"); err == nil {
		t.Errorf("a refused add wrote a schedule")
	}
	// An interval of no time is named as such, not as a schedule without cron or interval.
	for _, every := range []string{"0s", "-1h"} {
		if code, _, errOut := b.run(t, "cron", "add", "x", "-every", every, "-kind", "k"); code != exitUsage ||
			!strings.HasPrefix(errOut, `headgate cron: -every "`+every+`" is not a positive interval`+"\n") {
			t.Errorf("cron add -every %s: exit %d, stderr %q", every, code, errOut)
		}
	}
}

// TestCronBadFlagValueIsUsage: a value of add's or update's flags that the store refuses
// is a usage error (exit 2) named by the flag that was typed, not by the library's field
// ("invalid Job.Kind"), and nothing is written.
func TestCronBadFlagValueIsUsage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustRun(t, "cron", "add", "nightly", "-cron", "30 2 * * *", "-kind", "report")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "x", "-cron", "* * * * *"}, "-kind is empty"},
		{[]string{"add", "x", "-cron", "* * * * *", "-kind", "k", "-zone", "Mars/Base"}, `-zone "Mars/Base" is not an IANA time zone`},
		{[]string{"add", "x", "-every", "500ms", "-kind", "k"}, "-every is 500ms"},
		{[]string{"add", "x", "-cron", "* * * * *", "-kind", "k", "-misfire", "bogus"}, `-misfire "bogus" is none of`},
		{[]string{"add", "x", "-cron", "* * * * *", "-kind", "k", "-max-attempts", "-4"}, "-max-attempts is negative (-4)"},
		{[]string{"add", "x", "-cron", "* * * * *", "-kind", "k", "-queue", "a:b"}, "-queue "},
		{[]string{"add", "x", "-cron", "* * * * *", "-kind", "k", "-unique-window", "1h"}, "-unique is empty"},
		{[]string{"add", "x", "-cron", "* * * * *", "-kind", "k", "-grace", "-1m"}, "-grace is -1m0s"},
		{[]string{"add", "", "-cron", "* * * * *", "-kind", "k"}, "the schedule name is empty"},
		{[]string{"update", "nightly", "-cron", "61 * * * *"}, `-cron "61 * * * *": `},
	} {
		args := append([]string{"cron"}, tc.args...)
		code, out, errOut := b.run(t, args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "headgate cron: "+tc.want) {
			t.Errorf("headgate %q: exit %d, stdout %q, stderr %q; want exit %d and %q", args, code, out, errOut, exitUsage, tc.want)
		}
	}
	if _, err := b.store.GetSchedule(b.ctx, "x"); err == nil {
		t.Errorf("a refused add wrote a schedule")
	}
	if out := b.mustRun(t, "cron", "list"); !strings.Contains(out, "nightly  30 2 * * *") {
		t.Errorf("a refused update changed the schedule:\n%s", out)
	}
}

// TestCronJSONFieldsAlwaysPresent: a schedule's -json document has the same fields
// whatever the schedule is (cron or interval, with a partition or not, catch_up or
// not), null where a field has no value, so a script reads them all from every one.
func TestCronJSONFieldsAlwaysPresent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustRun(t, "cron", "add", "full", "-cron", "30 2 * * *", "-kind", "report", "-partition", "t1", "-unique", "u",
		"-tags", "a", "-misfire", "catch_up", "-catch-up-max", "2", "-catch-up-window", "1h")
	b.mustRun(t, "cron", "add", "bare", "-every", "1m", "-kind", "report")
	var list struct {
		Schedules []map[string]any `json:"schedules"`
	}
	b.runJSON(t, exitOK, &list, "cron", "list")
	if len(list.Schedules) != 2 {
		t.Fatalf("list -json: %v", list)
	}
	keys := func(m map[string]any) string {
		var ks []string
		for k, v := range m {
			ks = append(ks, k)
			if sub, ok := v.(map[string]any); ok {
				for k2 := range sub {
					ks = append(ks, k+"."+k2)
				}
			}
		}
		slices.Sort(ks)
		return strings.Join(ks, " ")
	}
	if a, b := keys(list.Schedules[0]), keys(list.Schedules[1]); a != b {
		t.Errorf("the schedules' documents have different fields:\n%s\n%s", a, b)
	}
	for _, sc := range list.Schedules {
		if sc["name"] != "bare" {
			continue
		}
		misfire, _ := sc["misfire"].(map[string]any)
		job, _ := sc["job"].(map[string]any)
		if sc["cron"] != nil || sc["interval_ms"] != 60000.0 || sc["start"] != nil || misfire["max"] != nil ||
			misfire["window_ms"] != nil || job["partition"] != "" || job["unique_key"] != "" || sc["last_refusal"] != "" {
			t.Errorf("bare schedule: %v", sc)
		}
		if tags, ok := job["tags"].([]any); !ok || len(tags) != 0 {
			t.Errorf("bare schedule's tags: %#v, want []", job["tags"])
		}
	}
}

// TestCronPayloadEncodesMsgpack: a schedule's -payload is JSON on the command line and
// msgpack in the jobs its ticks enqueue, as a worker's handler decodes it; -json shows
// the stored bytes in base64, as a job's document does.
func TestCronPayloadEncodesMsgpack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustRun(t, "cron", "add", "mail", "-every", "1h", "-kind", "email", "-payload", `{"to":"ada@example.com","n":3}`)
	var run struct {
		Name     string `json:"name"`
		JobID    string `json:"job_id"`
		Replayed bool   `json:"replayed"`
	}
	b.runJSON(t, exitOK, &run, "cron", "run-now", "mail")
	j, err := b.store.GetJob(b.ctx, run.JobID)
	if err != nil {
		t.Fatal(err)
	}
	var args struct {
		To string `msgpack:"to"`
		N  int    `msgpack:"n"`
	}
	if err := msgpack.Unmarshal(j.Payload, &args); err != nil || args.To != "ada@example.com" || args.N != 3 {
		t.Errorf("the tick's payload %q: %+v, %v", j.Payload, args, err)
	}
	var list struct {
		Schedules []scheduleJSON `json:"schedules"`
	}
	b.runJSON(t, exitOK, &list, "cron", "list")
	if len(list.Schedules) != 1 || !bytes.Equal(list.Schedules[0].Job.Payload, j.Payload) {
		t.Fatalf("list -json: %+v; want the payload %q of the job it enqueued", list.Schedules, j.Payload)
	}
	var doc jobDetailJSON
	b.runJSON(t, exitOK, &doc, "job", run.JobID)
	if !bytes.Equal(doc.Job.Payload, list.Schedules[0].Job.Payload) {
		t.Errorf("job -json payload %q, cron list -json payload %q: want the same encoding", doc.Job.Payload, list.Schedules[0].Job.Payload)
	}
	if code, _, errOut := b.run(t, "cron", "add", "bad", "-every", "1h", "-kind", "email", "-payload", "{"); code != exitUsage ||
		!strings.Contains(errOut, "-payload is not JSON") {
		t.Errorf("cron add -payload {: exit %d, %s", code, errOut)
	}
}

// TestCronUpdateKeepsWhatIsNotGiven: cron update changes the fields its flags name and
// keeps the rest of the stored definition. It used to build the definition from the flags
// alone, so "cron update nightly -cron '0 4 * * *' -kind report" moved the schedule to
// UTC, its jobs to the default queue, and dropped their payload, tags and misfire policy.
func TestCronUpdateKeepsWhatIsNotGiven(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustRun(t, "cron", "add", "nightly", "-cron", "30 2 * * *", "-zone", "Europe/Berlin", "-kind", "report",
		"-payload", `{"full":true}`, "-queue", "reports", "-partition", "t1", "-priority", "3", "-max-attempts", "5",
		"-unique", "nightly", "-unique-window", "1h", "-tags", "b,a", "-retention", "2h", "-misfire", "catch_up",
		"-catch-up-max", "3", "-catch-up-window", "6h", "-grace", "2m")
	before, err := b.store.GetSchedule(b.ctx, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	requireOutput(t, b.mustRun(t, "cron", "update", "nightly", "-cron", "0 4 * * *"),
		"updated schedule nightly (revision 2), next due 2030-01-03 03:00:00 UTC\n") // 04:00 in Berlin
	st, err := b.store.GetSchedule(b.ctx, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	want := before.Schedule
	want.Cron = "0 4 * * *"
	if got := fmt.Sprintf("%+v", st.Schedule); got != fmt.Sprintf("%+v", want) {
		t.Errorf("after update -cron:\n got %s\nwant %s", got, fmt.Sprintf("%+v", want))
	}
	// The flags given replace their fields, an empty -tags and -payload included.
	b.mustRun(t, "cron", "update", "nightly", "-every", "90m", "-queue", "q2", "-tags", "", "-payload", "", "-misfire", "skip")
	st, err = b.store.GetSchedule(b.ctx, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	if st.Cron != "" || st.Interval != 90*time.Minute || st.Job.Queue != "q2" || len(st.Job.Tags) != 0 ||
		len(st.Job.Payload) != 0 || st.Misfire.Policy != "skip" || st.Job.Kind != "report" || st.Job.PartitionKey != "t1" ||
		st.Job.UniqueKey != "nightly" {
		t.Errorf("after update -every -queue -tags '' -payload '' -misfire skip: %+v", st.Schedule)
	}
	if code, _, errOut := b.run(t, "cron", "update", "nope", "-cron", "@daily"); code != exitError ||
		!strings.Contains(errOut, "schedule not found") {
		t.Errorf("update of an unknown schedule: exit %d, %s", code, errOut)
	}
	if code, _, errOut := b.run(t, "cron", "update", "nightly", "-cron", "@daily", "-every", "1h"); code != exitUsage ||
		!strings.Contains(errOut, "not both") {
		t.Errorf("update -cron -every: exit %d, %s", code, errOut)
	}
}
