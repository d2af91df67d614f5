package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/humandur"
)

// wfCommand is the wf command: durable workflows of the namespace, listed, shown as a
// timeline, signalled and steered by the operator verbs.
var wfCommand = &command{name: "wf",
	args: "list [-status S] [-type T] [-limit N] [-after CURSOR] [-tz ZONE] | show ID [-tz ZONE] | signal ID NAME JSON" +
		" | cancel|pause|resume|terminate ID [-reason R] | retry ID | deployments [-limit N] [-after CURSOR] | drain|activate DEPLOYMENT [-json]",
	summary: "durable workflows: list, show a run's timeline, signal, cancel, pause, resume, terminate, retry; worker deployments, drained and activated",
	flags:   wfFlags, run: cmdWf}

// wfOpts are the flags of the wf command.
type wfOpts struct {
	json   bool
	status string
	typ    string
	limit  int
	after  string
	reason string
	tz     string
}

func wfFlags(fs *flag.FlagSet, c *cli) {
	fs.BoolVar(&c.wf.json, "json", false, "print one JSON document on stdout")
	fs.StringVar(&c.wf.status, "status", "", "list: only workflows in `STATUS` (running, paused, completed, failed, cancelled, terminated, continued_as_new)")
	fs.StringVar(&c.wf.typ, "type", "", "list: only workflows of `TYPE`")
	fs.IntVar(&c.wf.limit, "limit", 50, "list, deployments: at most `N` rows (1..1000)")
	fs.StringVar(&c.wf.after, "after", "", "list, deployments: continue after `CURSOR` (printed by the previous page)")
	fs.StringVar(&c.wf.reason, "reason", "", "cancel, pause, resume, terminate: the `REASON` recorded in the history")
	fs.StringVar(&c.wf.tz, "tz", "Local", "show, list: print times in time `ZONE` (UTC, Europe/Paris, Local)")
}

func cmdWf(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 {
		return usagef("name a subcommand: list, show, signal, cancel, pause, resume, terminate, retry, deployments, drain or activate")
	}
	sub, args := args[0], args[1:]
	if sub != "list" && (c.wf.status != "" || c.wf.typ != "") {
		return usagef("-status and -type go with list")
	}
	if sub != "list" && sub != "deployments" && c.wf.after != "" {
		return usagef("-after goes with list and deployments")
	}
	if c.wf.reason != "" && sub != "cancel" && sub != "pause" && sub != "resume" && sub != "terminate" {
		return usagef("-reason goes with cancel, pause, resume and terminate")
	}
	switch sub {
	case "list":
		return cmdWfList(ctx, c, args)
	case "show":
		if err := wantArgs(args, 1); err != nil {
			return err
		}
		return cmdWfShow(ctx, c, args[0])
	case "signal":
		if err := wantArgs(args, 3); err != nil {
			return err
		}
		if !json.Valid([]byte(args[2])) {
			return usagef("the signal's payload %q is not JSON", short(args[2]))
		}
		return c.wfVerb(ctx, "signal", args[0], func() (string, string, error) {
			err := c.insp.SignalWorkflow(ctx, args[0], args[1], []byte(args[2]))
			if inv, ok := errors.AsType[*headgate.InvalidError](err); ok && inv.Field == "name" {
				return "", "", usagef("the signal's NAME %s", inv.Reason) // what was typed, not the store's field
			}
			return "delivered", "", err
		})
	case "cancel", "pause", "resume", "terminate", "retry":
		if err := wantArgs(args, 1); err != nil {
			return err
		}
		return c.wfVerb(ctx, sub, args[0], func() (string, string, error) { return c.wfApply(ctx, sub, args[0]) })
	case "deployments":
		return cmdWfDeployments(ctx, c, args)
	case "drain", "activate":
		return cmdWfSetDeploymentState(ctx, c, sub, args)
	}
	return usagef("unknown wf subcommand %q", short(sub))
}

// wfApply runs an operator verb and says what it did: "applied", "requested" (it waits
// for the running task, or for the run's code to see it) or "unchanged", and for retry
// the new task's id.
func (c *cli) wfApply(ctx context.Context, verb, id string) (result, task string, err error) {
	reason := c.wf.reason
	switch verb {
	case "cancel":
		requested, err := c.insp.CancelWorkflow(ctx, id, reason)
		if !requested {
			return "unchanged", "", err // a cancel of the run is pending already
		}
		return "requested", "", err
	case "pause":
		r, err := c.insp.PauseWorkflow(ctx, id, reason)
		return string(r), "", err
	case "resume":
		r, err := c.insp.ResumeWorkflow(ctx, id, reason)
		return string(r), "", err
	case "terminate":
		return "applied", "", c.insp.TerminateWorkflow(ctx, id, reason)
	}
	task, err = c.insp.RetryWorkflow(ctx, id)
	return "applied", task, err
}

// wfVerbJSON is the -json output of signal and the operator verbs.
type wfVerbJSON struct {
	WorkflowID string `json:"workflow_id"`
	Verb       string `json:"verb"`
	// Result is delivered (signal), requested (cancel; pause or resume of a run whose
	// task is running), applied, or unchanged (paused or its pause requested already,
	// not paused, a cancel requested already).
	Result string `json:"result"`
	// Status is the workflow's status read after the verb.
	Status string `json:"status"`
	// TaskID is the task retry enqueued, null for the other verbs.
	TaskID *string `json:"task_id"`
}

// wfVerb runs do, then reads the workflow's status for the report.
func (c *cli) wfVerb(ctx context.Context, verb, id string, do func() (result, task string, err error)) error {
	result, task, err := do()
	if err != nil {
		return err
	}
	w, err := c.insp.Workflow(ctx, id)
	if err != nil {
		return err
	}
	out := wfVerbJSON{WorkflowID: id, Verb: verb, Result: result, Status: string(w.Status)}
	if task != "" {
		out.TaskID = &task
	}
	if c.wf.json {
		return c.printJSON(out)
	}
	said := result
	if verb == "cancel" && result == "unchanged" {
		said = "cancel already requested (unchanged)"
	}
	line := fmt.Sprintf("%s %s: %s, now %s", verb, id, said, w.Status)
	if task != "" {
		line += ", task " + task
	}
	fmt.Fprintln(c.stdout, line)
	return nil
}

// zone is the -tz location.
func (c *cli) zone() (*time.Location, error) {
	loc, err := time.LoadLocation(c.wf.tz)
	if err != nil {
		return nil, usagef("-tz %q: %v", short(c.wf.tz), err)
	}
	return loc, nil
}

// zonedTime writes t in loc to the millisecond with its zone's offset and name, or "-".
func zonedTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	t = t.In(loc)
	return t.Format("2006-01-02T15:04:05.000Z07:00") + " " + t.Format("MST")
}

// utcTime is how wf's -json output writes a time: jsonTime in UTC.
func utcTime(t time.Time) *string { return jsonTime(t.UTC()) }

// wfSummaryJSON is a workflow's row in -json output.
type wfSummaryJSON struct {
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

func wfSummaryOf(w *headgate.WorkflowSummary) wfSummaryJSON {
	return wfSummaryJSON{ID: w.WorkflowID, Type: w.WorkflowType, Status: string(w.Status), RunID: w.RunID,
		ParentID: w.ParentWorkflowID, ParentRunID: w.ParentRunID, PackageVersion: w.PackageVersion, Head: w.Head,
		StartedAt: utcTime(w.StartedAt), ClosedAt: utcTime(w.ClosedAt), UpdatedAt: utcTime(w.UpdatedAt)}
}

// wfPage checks the arguments of a paged listing (none, and -limit) and returns the
// zone to print its times in.
func (c *cli) wfPage(args []string) (*time.Location, error) {
	if err := wantArgs(args, 0); err != nil {
		return nil, err
	}
	if c.wf.limit < 1 || c.wf.limit > 1000 {
		return nil, usagef("-limit %d is outside 1..1000", c.wf.limit)
	}
	return c.zone()
}

func cmdWfList(ctx context.Context, c *cli, args []string) error {
	loc, err := c.wfPage(args)
	if err != nil {
		return err
	}
	f := headgate.WorkflowFilter{WorkflowType: c.wf.typ, Status: headgate.WorkflowStatus(c.wf.status)}
	rows, next, err := c.insp.Workflows(ctx, f, c.wf.after, c.wf.limit)
	var inv *headgate.InvalidError
	if errors.As(err, &inv) {
		// Named by the flag that carried it, not by the store's field.
		if flag, ok := map[string]string{"filter.Status": "-status", "filter.WorkflowType": "-type", "cursor": "-after"}[inv.Field]; ok {
			return usagef("%s %s", flag, inv.Reason)
		}
		return usagef("%s", inv.Error())
	}
	if err != nil {
		return err
	}
	if c.wf.json {
		out := struct {
			Workflows []wfSummaryJSON `json:"workflows"`
			Next      *string         `json:"next"`
		}{Workflows: []wfSummaryJSON{}}
		for _, w := range rows {
			out.Workflows = append(out.Workflows, wfSummaryOf(w))
		}
		if next != "" {
			out.Next = &next
		}
		return c.printJSON(out)
	}
	if len(rows) == 0 && next == "" {
		fmt.Fprintln(c.stdout, "no workflows")
		return nil
	}
	tw := c.table()
	fmt.Fprintln(tw, "ID\tTYPE\tSTATUS\tSTARTED\tCLOSED\tEVENTS")
	for _, w := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", w.WorkflowID, w.WorkflowType, w.Status,
			zonedTime(w.StartedAt, loc), zonedTime(w.ClosedAt, loc), w.Head)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(c.stdout, "more: %s\n", c.wfNextPage("list", next))
	}
	return nil
}

// wfNextPage is the command line that prints the page after next of wf sub (list or
// deployments): the same filters, limit and zone, and -after next.
func (c *cli) wfNextPage(sub, next string) string {
	s := c.commandLine("wf") + " " + sub
	if c.wf.status != "" {
		s += " -status " + strconv.Quote(c.wf.status)
	}
	if c.wf.typ != "" {
		s += " -type " + strconv.Quote(c.wf.typ)
	}
	s += " -limit " + strconv.Itoa(c.wf.limit)
	if c.wf.tz != "Local" {
		s += " -tz " + strconv.Quote(c.wf.tz)
	}
	return s + " -after " + strconv.Quote(next)
}

// wfEventJSON is one event of a timeline in -json output. Input, result and payload are
// the JSON values the runtime recorded (a string when they are not JSON).
type wfEventJSON struct {
	Seq        int64           `json:"seq"`
	At         *string         `json:"at"`
	Kind       string          `json:"kind"`
	Text       string          `json:"text"`
	RunID      string          `json:"run_id,omitempty"`
	Type       string          `json:"type,omitempty"`
	Name       string          `json:"name,omitempty"`
	Attempt    int             `json:"attempt,omitempty"`
	TimerID    string          `json:"timer_id,omitempty"`
	FireAt     *string         `json:"fire_at,omitempty"`
	ChildID    string          `json:"child_id,omitempty"`
	ChildRunID string          `json:"child_run_id,omitempty"`
	Queue      string          `json:"queue,omitempty"`
	Partition  string          `json:"partition,omitempty"`
	RateClass  string          `json:"rate_class,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Operator   string          `json:"operator,omitempty"`
	Error      string          `json:"error,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	// DurationMs is, for a step's end, the time since the run's previous event (the
	// step began no earlier); for a fired timer, how long after its fire time (FireAt,
	// from the event that armed it) it fired.
	DurationMs *int64 `json:"duration_ms,omitempty"`
}

// wfRunJSON is one run of the workflow id's chain.
type wfRunJSON struct {
	RunID     string  `json:"run_id"`
	Status    string  `json:"status"`
	StartedAt *string `json:"started_at"`
	ClosedAt  *string `json:"closed_at"`
}

// recorded is b as a JSON value: itself when it is JSON, else a JSON string of it.
func recorded(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b)) // a string always encodes
	return s
}

// timelineEntry describes event e of a history; prev is the run's previous event and
// due the fire times of the timers armed before e, by timer id.
func timelineEntry(e, prev headgate.Event, due map[string]time.Time, loc *time.Location) wfEventJSON {
	j := wfEventJSON{Seq: e.Seq, At: utcTime(e.RecordedAt), Kind: string(e.Kind), RunID: e.RunID, Type: e.WorkflowType,
		Name: e.Name, Attempt: e.Attempt, TimerID: e.TimerID, FireAt: utcTime(e.FireAt), ChildID: e.ChildWorkflowID,
		ChildRunID: e.ChildRunID, Queue: e.Queue, Partition: e.Partition, RateClass: e.RateClass, Reason: e.Reason,
		Operator: e.Operator, Input: recorded(e.Input), Result: recorded(e.Result), Payload: recorded(e.Payload)}
	if e.Error != nil {
		j.Error = e.Error.Message
	}
	ms := func(d time.Duration) *int64 { return new(d.Milliseconds()) }
	why := ""
	if e.Reason != "" {
		why = ": " + e.Reason
	}
	var t string
	switch e.Kind {
	case headgate.EventWorkflowStarted:
		t = fmt.Sprintf("workflow started: type %s, run %s", e.WorkflowType, e.RunID)
		if e.ParentWorkflowID != "" {
			t += ", child of " + e.ParentWorkflowID
		}
	case headgate.EventWorkflowCompleted:
		t = "workflow completed"
	case headgate.EventWorkflowFailed:
		t = "workflow failed: " + j.Error
	case headgate.EventWorkflowCancelRequested:
		t = "cancel requested" + why
	case headgate.EventWorkflowCancelled:
		t = "workflow cancelled" + why
	case headgate.EventWorkflowTerminated:
		t = "workflow terminated" + why
	case headgate.EventWorkflowPaused:
		t = "paused" + why
	case headgate.EventWorkflowResumed:
		t = "resumed" + why
	case headgate.EventWorkflowContinuedAsNew:
		t = "continued as new: next run " + e.RunID
	case headgate.EventStepScheduled:
		t = fmt.Sprintf("step %s scheduled as a job on %s (attempt %d)", e.Name, stepJobRoute(e), e.Attempt)
		if !e.FireAt.IsZero() {
			t += ", due at " + zonedTime(e.FireAt, loc)
		}
	case headgate.EventStepCompleted, headgate.EventStepFailed:
		d := e.RecordedAt.Sub(prev.RecordedAt)
		if prev.Seq != 0 {
			j.DurationMs = ms(d)
		}
		if e.Kind == headgate.EventStepCompleted {
			t = fmt.Sprintf("step %s completed in %s (attempt %d)", e.Name, humandur.String(d), e.Attempt)
		} else {
			t = fmt.Sprintf("step %s failed in %s (attempt %d): %s", e.Name, humandur.String(d), e.Attempt, j.Error)
			if !e.FireAt.IsZero() {
				t += "; retry at " + zonedTime(e.FireAt, loc)
			}
		}
	case headgate.EventTimerStarted:
		t = fmt.Sprintf("timer %s armed, fires at %s", e.TimerID, zonedTime(e.FireAt, loc))
		if e.FireAt.IsZero() {
			// A sleep of no time: the task fired it itself, never arming it.
			t = fmt.Sprintf("timer %s due at once", e.TimerID)
		}
	case headgate.EventTimerFired:
		t = "timer " + e.TimerID + " fired"
		if at, ok := due[e.TimerID]; ok {
			late := e.RecordedAt.Sub(at)
			j.FireAt, j.DurationMs = utcTime(at), ms(late)
			t += fmt.Sprintf(" (due %s, %s late)", zonedTime(at, loc), humandur.String(late))
		}
	case headgate.EventTimerCancelled:
		t = "timer " + e.TimerID + " cancelled"
	case headgate.EventSignalReceived:
		t = fmt.Sprintf("signal %s received: %s", e.Name, truncate(string(j.Payload)))
	case headgate.EventChildStarted:
		t = fmt.Sprintf("child %s started: %s, type %s", e.Name, e.ChildWorkflowID, e.WorkflowType)
	case headgate.EventChildCompleted:
		t = "child " + e.ChildWorkflowID + " completed"
	case headgate.EventChildFailed:
		t = "child " + e.ChildWorkflowID + " failed: " + j.Error
	case headgate.EventMarkerRecorded:
		t = fmt.Sprintf("marker %s %s: %s", e.Reason, e.Name, truncate(string(j.Payload)))
		j.Reason = "" // a marker's Reason is its class, not an operator's reason
	default:
		t = string(e.Kind)
	}
	j.Text = t
	return j
}

func cmdWfShow(ctx context.Context, c *cli, id string) error {
	loc, err := c.zone()
	if err != nil {
		return err
	}
	w, err := c.insp.Workflow(ctx, id)
	if err != nil {
		return err
	}
	history, err := c.insp.WorkflowHistory(ctx, id)
	if err != nil {
		return err
	}
	runs, err := c.insp.WorkflowRuns(ctx, id)
	if err != nil {
		return err
	}
	timeline := make([]wfEventJSON, 0, len(history))
	var prev headgate.Event
	due := map[string]time.Time{}
	for _, e := range history {
		if e.Kind == headgate.EventWorkflowStarted {
			prev = headgate.Event{}
		}
		timeline = append(timeline, timelineEntry(e, prev, due, loc))
		prev = e
		switch {
		case e.Kind == headgate.EventTimerStarted && !e.FireAt.IsZero():
			due[e.TimerID] = e.FireAt
		case e.Kind == headgate.EventStepFailed && !e.FireAt.IsZero():
			// The runtime's retry timer of the step (workflow's retryTimer).
			due[fmt.Sprintf("retry/%s/%d", e.Name, e.Attempt)] = e.FireAt
		}
	}
	waiting := waitingStepJobs(w, history)
	if c.wf.json {
		out := struct {
			Workflow wfSummaryJSON `json:"workflow"`
			Runs     []wfRunJSON   `json:"runs"`
			Timeline []wfEventJSON `json:"timeline"`
			// StepJobs are the timeline's step_scheduled entries whose step waits for
			// its job.
			StepJobs []wfEventJSON `json:"waiting_step_jobs"`
		}{Workflow: wfSummaryOf(w), Runs: []wfRunJSON{}, Timeline: timeline, StepJobs: []wfEventJSON{}}
		for _, i := range waiting {
			out.StepJobs = append(out.StepJobs, timeline[i])
		}
		for _, r := range runs {
			out.Runs = append(out.Runs, wfRunJSON{RunID: r.RunID, Status: string(r.Status),
				StartedAt: utcTime(r.StartedAt), ClosedAt: utcTime(r.ClosedAt)})
		}
		return c.printJSON(out)
	}
	return printWorkflow(c.stdout, w, len(runs), history, timeline, waiting, loc)
}

// stepJobRoute is where a scheduled step's job runs: "queue Q, partition P, rate class R".
func stepJobRoute(e headgate.Event) string {
	r := "queue " + e.Queue
	if e.Partition != "" {
		r += ", partition " + e.Partition
	}
	if e.RateClass != "" {
		r += ", rate class " + e.RateClass
	}
	return r
}

// waitingStepJobs returns the indexes in history of the step_scheduled events of the
// open run whose steps have no outcome yet: the steps waiting for (or running as) their
// step jobs.
func waitingStepJobs(w *headgate.WorkflowSummary, history []headgate.Event) []int {
	if w.Status.Closed() {
		return nil
	}
	waiting := map[string]int{}
	for i, e := range history {
		switch e.Kind {
		case headgate.EventWorkflowStarted:
			clear(waiting)
		case headgate.EventStepScheduled:
			waiting[e.Name] = i
		case headgate.EventStepCompleted, headgate.EventStepFailed:
			delete(waiting, e.Name)
		}
	}
	return slices.Sorted(maps.Values(waiting))
}

// printWorkflow writes a workflow's row and its history as a timeline: one line per
// event, with its store time and the time since the run started.
func printWorkflow(out io.Writer, w *headgate.WorkflowSummary, runs int, history []headgate.Event, timeline []wfEventJSON,
	waiting []int, loc *time.Location) error {
	var b strings.Builder
	line := func(k, v string) { fmt.Fprintf(&b, "%-10s %s\n", k+":", v) }
	line("Workflow", w.WorkflowID)
	line("Type", w.WorkflowType)
	line("Status", string(w.Status))
	line("Run", fmt.Sprintf("%s (%d of the chain)", w.RunID, runs))
	if w.ParentWorkflowID != "" {
		line("Parent", w.ParentWorkflowID+" run "+w.ParentRunID)
	}
	if w.PackageVersion != "" {
		line("Package", w.PackageVersion)
	}
	line("Started", zonedTime(w.StartedAt, loc))
	line("Closed", zonedTime(w.ClosedAt, loc))
	line("Updated", zonedTime(w.UpdatedAt, loc))
	for _, i := range waiting {
		e := history[i]
		line("Waiting", fmt.Sprintf("step %s, attempt %d, as a job on %s", e.Name, e.Attempt, stepJobRoute(e)))
	}
	fmt.Fprintf(&b, "\nTimeline (%d events):\n", len(history))
	var runStart time.Time
	for i, e := range history {
		if e.Kind == headgate.EventWorkflowStarted || runStart.IsZero() {
			runStart = e.RecordedAt
		}
		fmt.Fprintf(&b, "%4d  %s  +%-10s %s\n", e.Seq, zonedTime(e.RecordedAt, loc), humandur.String(e.RecordedAt.Sub(runStart)), timeline[i].Text)
	}
	_, err := io.WriteString(out, b.String())
	return err
}
