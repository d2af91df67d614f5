package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/workflow"
	"github.com/headgate/headgate/workflowtest"
)

// wfBundle is a workflowtest env (frozen store clock at workflowtest.Epoch) that the
// command line reaches through its Redis address and namespace.
type wfBundle struct {
	*testBundle
	env *workflowtest.Env
}

// shipment charges (the step takes 250ms of store time), sleeps an hour, waits for the
// "shipped" signal, then starts a "refund" child that fails when the tracking is "lost".
func shipment(env *workflowtest.Env) func(ctx workflow.Context, id string) (string, error) {
	return func(ctx workflow.Context, id string) (string, error) {
		charge, err := workflow.Step(ctx, "charge", func(ctx context.Context) (string, error) {
			return "ch_" + id, env.Store.AdvanceClock(ctx, 250*time.Millisecond)
		}, nil)
		if err != nil {
			return "", err
		}
		if err := workflow.Sleep(ctx, "cool", time.Hour); err != nil {
			return "", err
		}
		tracking, _, err := workflow.Await[string](ctx, "shipped", 0)
		if err != nil {
			return "", err
		}
		if tracking == "lost" {
			if _, err := workflow.Child[string](ctx, "refund", "refund", charge); err != nil {
				return "", err
			}
		}
		return charge + "/" + tracking, nil
	}
}

func setupWf(t *testing.T) *wfBundle {
	t.Helper()
	rdb := redistest.Miniredis(t)
	env := workflowtest.NewOn(t, rdb)
	workflow.Register(env.Worker, "shipment", shipment(env))
	workflow.Register(env.Worker, "refund", func(ctx workflow.Context, charge string) (string, error) {
		return "", errors.New("the bank refused the refund of " + charge)
	})
	return &wfBundle{env: env, testBundle: &testBundle{ctx: env.Context(), store: env.Store, ns: env.Store.Namespace(),
		url: "redis://" + rdb.(*redis.Client).Options().Addr}}
}

func wfArgs(args []string) []string { return append([]string{"wf"}, args...) }

// wf runs "headgate wf args..." on the bundle's namespace.
func (b *wfBundle) wf(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return b.run(t, wfArgs(args)...)
}

func (b *wfBundle) mustWf(t *testing.T, args ...string) string {
	t.Helper()
	return b.mustRun(t, wfArgs(args)...)
}

// wfJSON runs "headgate wf args... -json" (see runJSON).
func (b *wfBundle) wfJSON(t *testing.T, code int, v any, args ...string) {
	t.Helper()
	b.runJSON(t, code, v, wfArgs(args)...)
}

type wfSummary struct {
	ID             string  `json:"id"`
	Type           string  `json:"type"`
	Status         string  `json:"status"`
	RunID          string  `json:"run_id"`
	ParentID       string  `json:"parent_id"`
	ParentRunID    string  `json:"parent_run_id"`
	PackageVersion string  `json:"package_version"`
	Head           int64   `json:"head"`
	StartedAt      *string `json:"started_at"`
	ClosedAt       *string `json:"closed_at"`
	UpdatedAt      *string `json:"updated_at"`
}

type wfEvent struct {
	Seq        int64           `json:"seq"`
	At         *string         `json:"at"`
	Kind       string          `json:"kind"`
	Text       string          `json:"text"`
	RunID      string          `json:"run_id"`
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Attempt    int             `json:"attempt"`
	TimerID    string          `json:"timer_id"`
	FireAt     *string         `json:"fire_at"`
	ChildID    string          `json:"child_id"`
	ChildRunID string          `json:"child_run_id"`
	Queue      string          `json:"queue"`
	Partition  string          `json:"partition"`
	RateClass  string          `json:"rate_class"`
	Reason     string          `json:"reason"`
	Operator   string          `json:"operator"`
	Error      string          `json:"error"`
	Input      json.RawMessage `json:"input"`
	Result     json.RawMessage `json:"result"`
	Payload    json.RawMessage `json:"payload"`
	DurationMs *int64          `json:"duration_ms"`
}

type wfShow struct {
	Workflow wfSummary `json:"workflow"`
	Runs     []struct {
		RunID     string  `json:"run_id"`
		Status    string  `json:"status"`
		StartedAt *string `json:"started_at"`
		ClosedAt  *string `json:"closed_at"`
	} `json:"runs"`
	Timeline        []wfEvent `json:"timeline"`
	WaitingStepJobs []wfEvent `json:"waiting_step_jobs"`
}

type wfVerb struct {
	WorkflowID string  `json:"workflow_id"`
	Verb       string  `json:"verb"`
	Result     string  `json:"result"`
	Status     string  `json:"status"`
	TaskID     *string `json:"task_id"`
}

func TestWfShowTimeline(t *testing.T) {
	t.Parallel()
	b := setupWf(t)
	b.env.Start("shipment", "o1", "o1")
	b.env.Run()
	b.env.Advance(time.Hour)
	var sig wfVerb
	b.wfJSON(t, exitOK, &sig, "signal", "o1", "shipped", `"lost"`)
	if sig != (wfVerb{WorkflowID: "o1", Verb: "signal", Result: "delivered", Status: "running"}) {
		t.Errorf("signal -json: %+v", sig)
	}
	b.env.Run()
	if st := b.env.Status("o1"); st != headgate.WorkflowFailed {
		t.Fatalf("o1 is %s, want failed:\n%s", st, b.env.Timeline("o1"))
	}

	out := b.mustWf(t, "show", "o1", "-tz", "UTC")
	for _, want := range []string{
		"Workflow:  o1\n", "Type:      shipment\n", "Status:    failed\n", "Started:   2030-01-01T00:00:00.000Z UTC\n",
		"   1  2030-01-01T00:00:00.000Z UTC  +0s         workflow started: type shipment, run ",
		"   2  2030-01-01T00:00:00.250Z UTC  +250ms      step charge#1 completed in 250ms (attempt 1)\n",
		"timer sleep/cool#1 armed, fires at 2030-01-01T01:00:00.250Z UTC\n",
		"   4  2030-01-01T01:00:00.250Z UTC  +1h         timer sleep/cool#1 fired (due 2030-01-01T01:00:00.250Z UTC, 0s late)\n",
		`signal shipped received: "lost"` + "\n",
		"child refund#1 started: o1/refund#1, type refund\n",
		"child o1/refund#1 failed: the bank refused the refund of ch_o1\n",
		"workflow failed: workflow: child \"o1/refund#1\" failed: the bank refused the refund of ch_o1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("wf show lacks %q:\n%s", want, out)
		}
	}
	if out := b.mustWf(t, "show", "o1", "-tz", "Asia/Tokyo"); !strings.Contains(out, "Started:   2030-01-01T09:00:00.000+09:00 JST\n") {
		t.Errorf("wf show -tz Asia/Tokyo:\n%s", out)
	}

	var show wfShow
	b.wfJSON(t, exitOK, &show, "show", "o1")
	w := show.Workflow
	if w.ID != "o1" || w.Type != "shipment" || w.Status != "failed" || w.StartedAt == nil ||
		*w.StartedAt != "2030-01-01T00:00:00.000Z" || w.ClosedAt == nil || w.Head != int64(len(show.Timeline)) {
		t.Errorf("show -json workflow: %+v", w)
	}
	if len(show.Runs) != 1 || show.Runs[0].RunID != w.RunID || show.Runs[0].Status != "failed" {
		t.Errorf("show -json runs: %+v", show.Runs)
	}
	var kinds []string
	byKind := map[string]wfEvent{}
	for _, e := range show.Timeline {
		kinds = append(kinds, e.Kind)
		byKind[e.Kind] = e
	}
	wantKinds := []string{"workflow_started", "step_completed", "timer_started", "timer_fired", "signal_received",
		"child_started", "child_failed", "workflow_failed"}
	if !slices.Equal(kinds, wantKinds) {
		t.Fatalf("show -json kinds %v, want %v", kinds, wantKinds)
	}
	if e := byKind["workflow_started"]; string(e.Input) != `"o1"` || e.Type != "shipment" || e.RunID != w.RunID {
		t.Errorf("workflow_started: %+v", e)
	}
	if e := byKind["step_completed"]; e.Name != "charge#1" || e.Attempt != 1 || string(e.Result) != `"ch_o1"` ||
		e.DurationMs == nil || *e.DurationMs != 250 || e.At == nil || *e.At != "2030-01-01T00:00:00.250Z" {
		t.Errorf("step_completed: %+v", e)
	}
	if e := byKind["timer_started"]; e.TimerID != "sleep/cool#1" || e.FireAt == nil || *e.FireAt != "2030-01-01T01:00:00.250Z" {
		t.Errorf("timer_started: %+v", e)
	}
	if e := byKind["timer_fired"]; e.DurationMs == nil || *e.DurationMs != 0 || e.FireAt == nil || *e.FireAt != "2030-01-01T01:00:00.250Z" {
		t.Errorf("timer_fired: %+v", e)
	}
	if e := byKind["signal_received"]; e.Name != "shipped" || string(e.Payload) != `"lost"` {
		t.Errorf("signal_received: %+v", e)
	}
	if e := byKind["child_failed"]; e.ChildID != "o1/refund#1" || !strings.Contains(e.Error, "the bank refused") {
		t.Errorf("child_failed: %+v", e)
	}

	// The child is listed with its parent; list filters by type and status.
	var list struct {
		Workflows []wfSummary `json:"workflows"`
		Next      *string     `json:"next"`
	}
	b.wfJSON(t, exitOK, &list, "list", "-type", "refund")
	if len(list.Workflows) != 1 || list.Workflows[0].ID != "o1/refund#1" || list.Workflows[0].ParentID != "o1" ||
		list.Workflows[0].Status != "failed" || list.Next != nil {
		t.Errorf("list -type refund: %+v", list)
	}
}

func TestWfList(t *testing.T) {
	t.Parallel()
	b := setupWf(t)
	for _, id := range []string{"a", "b", "c"} {
		b.env.Start("shipment", id, id)
	}
	b.env.Run()
	if _, err := b.env.Client.Pause(b.env.Context(), "b", "hold"); err != nil {
		t.Fatal(err)
	}
	if out := b.mustWf(t, "list", "-tz", "UTC"); !strings.Contains(out, "ID  TYPE      STATUS   STARTED") ||
		!strings.Contains(out, "b   shipment  paused   2030-01-01T00:00:00.000Z UTC  -") {
		t.Errorf("wf list:\n%s", out)
	}
	var list struct {
		Workflows []wfSummary `json:"workflows"`
		Next      *string     `json:"next"`
	}
	b.wfJSON(t, exitOK, &list, "list", "-status", "running", "-type", "shipment", "-limit", "1")
	if len(list.Workflows) != 1 || list.Workflows[0].ID != "a" || list.Workflows[0].Status != "running" || list.Next == nil {
		t.Fatalf("first page: %+v", list)
	}
	// The table's last line is the command line of the next page.
	if out := b.mustWf(t, "list", "-status", "running", "-type", "shipment", "-limit", "1", "-tz", "UTC"); !strings.HasSuffix(out,
		"more: headgate -namespace "+shellArg(b.ns)+" wf list -status \"running\" -type \"shipment\" -limit 1 -tz \"UTC\" -after "+strconv.Quote(*list.Next)+"\n") {
		t.Errorf("wf list first page:\n%s", out)
	}
	b.wfJSON(t, exitOK, &list, "list", "-status", "running", "-type", "shipment", "-limit", "1", "-after", *list.Next)
	if len(list.Workflows) != 1 || list.Workflows[0].ID != "c" {
		t.Errorf("second page: %+v", list)
	}
	b.wfJSON(t, exitOK, &list, "list", "-status", "completed")
	if len(list.Workflows) != 0 || list.Next != nil {
		t.Errorf("no completed workflow: %+v", list)
	}
	for _, args := range [][]string{{"list", "-status", "sleeping"}, {"list", "-limit", "0"}, {"list", "x"},
		{"show", "a", "-status", "running"}, {"show", "a", "-tz", "Mars/Olympus"}, {}, {"frob", "a"}} {
		if code, _, errOut := b.wf(t, args...); code != exitUsage {
			t.Errorf("wf %v: exit %d, want %d: %s", args, code, exitUsage, errOut)
		}
	}
	// A bad value is named by its flag.
	if _, _, errOut := b.wf(t, "list", "-status", "sleeping"); !strings.HasPrefix(errOut,
		`headgate wf: -status "sleeping" is not a workflow status`+"\n") {
		t.Errorf("wf list -status sleeping: stderr %q", errOut)
	}
	// Base64 that is not a cursor of the listing ("zzz") is refused too, not taken as a
	// position past every row.
	for _, after := range []string{"no!", "zzz"} {
		if code, out, errOut := b.wf(t, "list", "-after", after); code != exitUsage || out != "" || !strings.HasPrefix(errOut,
			`headgate wf: -after "`+after+`" is not a cursor of this listing`+"\n") {
			t.Errorf("wf list -after %s: exit %d, stdout %q, stderr %q", after, code, out, errOut)
		}
	}
}

func TestWfVerbs(t *testing.T) {
	t.Parallel()
	b := setupWf(t)
	ctx := b.env.Context()
	b.env.Start("shipment", "o1", "o1")
	b.env.Run()

	var v wfVerb
	b.wfJSON(t, exitOK, &v, "pause", "o1", "-reason", "audit")
	if v != (wfVerb{WorkflowID: "o1", Verb: "pause", Result: "applied", Status: "paused"}) {
		t.Errorf("pause -json: %+v", v)
	}
	if ids, _, err := b.env.Store.ListPaused(ctx, "", 10); err != nil || !slices.Equal(ids, []string{"o1"}) {
		t.Errorf("paused after wf pause: %v, %v", ids, err)
	}
	if out := b.mustWf(t, "pause", "o1"); out != "pause o1: unchanged, now paused\n" {
		t.Errorf("second pause: %q", out)
	}
	b.wfJSON(t, exitOK, &v, "resume", "o1")
	if v.Result != "applied" || v.Status != "running" {
		t.Errorf("resume -json: %+v", v)
	}
	b.wfJSON(t, exitOK, &v, "cancel", "o1", "-reason", "customer left")
	if v.Result != "requested" || v.Verb != "cancel" {
		t.Errorf("cancel -json: %+v", v)
	}
	h := b.env.History("o1")
	var reasons []string
	for _, e := range h {
		if e.Reason != "" && e.Kind != headgate.EventMarkerRecorded {
			reasons = append(reasons, string(e.Kind)+":"+e.Reason)
		}
	}
	if want := []string{"workflow_paused:audit", "workflow_cancel_requested:customer left"}; !slices.Equal(reasons, want) {
		t.Errorf("reasons in the history %v, want %v", reasons, want)
	}
	b.env.Run()
	if st := b.env.Status("o1"); st != headgate.WorkflowCancelled {
		t.Fatalf("o1 after cancel: %s\n%s", st, b.env.Timeline("o1"))
	}

	b.env.Start("shipment", "o2", "o2")
	b.env.Run()
	if out := b.mustWf(t, "terminate", "o2", "-reason", "fraud"); out != "terminate o2: applied, now terminated\n" {
		t.Errorf("terminate: %q", out)
	}
	if st := b.env.Status("o2"); st != headgate.WorkflowTerminated {
		t.Errorf("o2 after terminate: %s", st)
	}

	// A failed run is retried from its last good point: a task is enqueued.
	b.env.Start("shipment", "o3", "o3")
	b.env.Run()
	b.env.Advance(time.Hour)
	b.env.Signal("o3", "shipped", "lost")
	b.env.Run()
	b.wfJSON(t, exitOK, &v, "retry", "o3")
	if v.Status != "running" || v.TaskID == nil {
		t.Fatalf("retry -json: %+v", v)
	}
	if j, err := b.env.Store.GetJob(ctx, *v.TaskID); err != nil || j.Kind != workflow.TaskKind("shipment") {
		t.Errorf("retry's task %s: %+v, %v", *v.TaskID, j, err)
	}

	// Refusals: an unknown id, a closed run, a run that did not fail; nothing written.
	before := b.env.History("o2")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "nope"}, `workflow not found: "nope"`},
		{[]string{"signal", "nope", "shipped", `"x"`}, `workflow not found`},
		{[]string{"cancel", "nope"}, `workflow not found`},
		{[]string{"pause", "nope"}, `workflow not found`},
		{[]string{"signal", "o2", "shipped", `"x"`}, `workflow "o2" is terminated: its run is over`},
		{[]string{"resume", "o2"}, `is terminated`},
		{[]string{"terminate", "o2"}, `is terminated`},
		{[]string{"retry", "o2"}, `workflow "o2" is terminated: only a failed run can be retried`},
		{[]string{"retry", "o3"}, `workflow "o3" is running: only a failed run can be retried`},
	} {
		code, out, errOut := b.wf(t, append(c.args, "-json")...)
		if code != exitError || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("wf %v: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errOut, exitError, c.want)
		}
	}
	if after := b.env.History("o2"); len(after) != len(before) {
		t.Errorf("refused verbs wrote to o2: %d events, was %d", len(after), len(before))
	}
	for _, args := range [][]string{{"signal", "o1", "shipped", "{"}, {"signal", "o1", "shipped"}, {"cancel"}, {"retry", "a", "b"},
		{"retry", "o3", "-reason", "x"}} {
		if code, _, errOut := b.wf(t, args...); code != exitUsage {
			t.Errorf("wf %v: exit %d, want %d: %s", args, code, exitUsage, errOut)
		}
	}
}

// TestWfShowStepJob: a step that waits for its step job shows where the job runs, in
// the timeline and as the run's Waiting line (waiting_step_jobs with -json).
func TestWfShowStepJob(t *testing.T) {
	t.Parallel()
	b := setupWf(t) // its worker does not serve "payments": the step job waits
	workflow.Register(b.env.Worker, "pay", func(ctx workflow.Context, _ struct{}) (string, error) {
		return workflow.Step(ctx, "charge", func(context.Context) (string, error) { return "ch", nil },
			&workflow.StepOptions{Job: &workflow.StepJob{Queue: "payments", Partition: "t-7", RateClass: "psp"}})
	})
	b.env.Start("pay", struct{}{}, "p1")
	b.env.Run()
	out := b.mustWf(t, "show", "p1", "-tz", "UTC")
	for _, want := range []string{
		"Waiting:   step charge#1, attempt 1, as a job on queue payments, partition t-7, rate class psp\n",
		"step charge#1 scheduled as a job on queue payments, partition t-7, rate class psp (attempt 1)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("wf show lacks %q:\n%s", want, out)
		}
	}
	var show wfShow
	b.wfJSON(t, exitOK, &show, "show", "p1")
	if w := show.WaitingStepJobs; len(w) != 1 || w[0].Kind != "step_scheduled" || w[0].Name != "charge#1" ||
		w[0].Queue != "payments" || w[0].Partition != "t-7" || w[0].RateClass != "psp" || w[0].Attempt != 1 {
		t.Errorf("show -json waiting_step_jobs: %+v", w)
	}
}

// wf cancel of a run whose cancel request is pending changes nothing and says so: no
// second workflow_cancel_requested event, result unchanged, no audit line.
func TestWfCancelTwice(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, b *testBundle) {
		if _, err := b.store.StartWorkflow(b.ctx, headgate.WorkflowStart{WorkflowID: "o1", WorkflowType: "t"}); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := b.run(t, "wf", "cancel", "o1", "-reason", "not needed")
		if code != exitOK || out != "cancel o1: requested, now running\n" || !strings.Contains(errOut, `msg="workflow cancel requested"`) {
			t.Fatalf("wf cancel o1: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		before := b.dump(t)
		code, out, errOut = b.run(t, "wf", "cancel", "o1")
		if code != exitOK || out != "cancel o1: cancel already requested (unchanged), now running\n" || errOut != "" {
			t.Errorf("wf cancel o1 again: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		var verb wfVerb
		b.runJSON(t, exitOK, &verb, "wf", "cancel", "o1")
		if verb != (wfVerb{WorkflowID: "o1", Verb: "cancel", Result: "unchanged", Status: "running"}) {
			t.Errorf("wf cancel o1 -json again: %+v, want result unchanged", verb)
		}
		if after := b.dump(t); after != before {
			t.Errorf("a repeated cancel changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		h, err := b.store.ReadHistory(b.ctx, "o1")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range h {
			if e.Kind == headgate.EventWorkflowCancelRequested {
				n++
			}
		}
		if n != 1 {
			t.Errorf("history has %d cancel requests, want 1: %+v", n, h)
		}
	})
}

// TestWfSignalRefusesANameNoAwaitTakes: a signal name that no workflow can await (the
// runtime's names are "<scope>/<name>#<n>") is a usage error naming NAME, and nothing
// is delivered; before, it was recorded and waited unread for good.
func TestWfSignalRefusesANameNoAwaitTakes(t *testing.T) {
	t.Parallel()
	b := setupWf(t)
	b.env.Start("shipment", "o1", "o1")
	b.env.Run()
	before := b.env.History("o1")
	for _, name := range []string{"order/shipped", "shipped#2", ""} {
		code, out, errOut := b.wf(t, "signal", "o1", name, `"1Z999"`)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "the signal's NAME ") {
			t.Errorf("wf signal o1 %q: exit %d, stdout %q, stderr %q; want a usage error naming NAME", name, code, out, errOut)
		}
	}
	if after := b.env.History("o1"); len(after) != len(before) {
		t.Errorf("refused signals wrote to o1: %d events, was %d", len(after), len(before))
	}
}
