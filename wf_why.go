package headgate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// WorkflowWhyReason names one reason a workflow's run is not making progress now (see
// WorkflowExplanation).
type WorkflowWhyReason string

// The reasons WhyWorkflow gives, in the order it gives them when several apply.
const (
	// WhyWorkflowClosed: the run closed with WorkflowReason.Status at WorkflowReason.At.
	WhyWorkflowClosed WorkflowWhyReason = "closed"
	// WhyWorkflowPaused: an operator paused the run at WorkflowReason.Since; its tasks
	// are held until it is resumed.
	WhyWorkflowPaused WorkflowWhyReason = "paused"
	// WhyWorkflowSleeping: the run sleeps until timer WorkflowReason.Timer, armed at
	// WorkflowReason.Since, fires at WorkflowReason.At.
	WhyWorkflowSleeping WorkflowWhyReason = "sleeping"
	// WhyWorkflowAwaitingSignal: the run awaits signal WorkflowReason.Signal since
	// WorkflowReason.Since; its timeout (timer WorkflowReason.Timer) fires at
	// WorkflowReason.At. An await without a timeout leaves no record in the store, so an
	// open run with nothing else outstanding is reported as awaiting a signal with
	// Signal, Timer and At empty.
	WhyWorkflowAwaitingSignal WorkflowWhyReason = "awaiting_signal"
	// WhyWorkflowStepRetry: step WorkflowReason.Step failed attempt
	// WorkflowReason.Attempt at WorkflowReason.Since with WorkflowReason.Message; its
	// retry's backoff timer WorkflowReason.Timer fires at WorkflowReason.At.
	WhyWorkflowStepRetry WorkflowWhyReason = "step_retry"
	// WhyWorkflowWaitingForStepJob: the run waits for step WorkflowReason.Step, which
	// runs as a job of its own (StepOptions.Job), scheduled at WorkflowReason.Since:
	// its step job WorkflowReason.Task, whose own explanation (Store.Why) is
	// WorkflowReason.TaskWhy (nil when the job is gone). For a
	// run pinned to package version WorkflowReason.Version whose step job no live worker
	// admits, the sentence says that no worker serves the version.
	WhyWorkflowWaitingForStepJob WorkflowWhyReason = "waiting_for_step_job"
	// WhyWorkflowWaitingForChild: the run waits for child workflow WorkflowReason.Child
	// (run WorkflowReason.ChildRun), started at WorkflowReason.Since, now in
	// WorkflowReason.ChildStatus ("" when the child has no row).
	WhyWorkflowWaitingForChild WorkflowWhyReason = "waiting_for_child"
	// WhyWorkflowTaskNotRunning: the run's task job WorkflowReason.Task is not running;
	// WorkflowReason.TaskWhy is that job's own explanation (Store.Why). For a run pinned
	// to package version WorkflowReason.Version whose task no live worker admits, the
	// sentence says that no worker serves the version.
	WhyWorkflowTaskNotRunning WorkflowWhyReason = "task_not_running"
	// WhyWorkflowRunning: the run's task job WorkflowReason.Task is running;
	// WorkflowReason.TaskWhy holds its running reason (worker, lease, since, until).
	WhyWorkflowRunning WorkflowWhyReason = "running"
)

// WorkflowReason is one reason of a WorkflowExplanation, with its numbers; which fields
// are set depends on Reason (see the WorkflowWhyReason constants).
type WorkflowReason struct {
	Reason WorkflowWhyReason `json:"reason"`

	Status      WorkflowStatus `json:"status,omitempty"`
	Timer       string         `json:"timer,omitempty"`
	Signal      string         `json:"signal,omitempty"`
	Child       string         `json:"child,omitempty"`
	ChildRun    string         `json:"child_run,omitempty"`
	ChildStatus WorkflowStatus `json:"child_status,omitempty"`
	Task        string         `json:"task,omitempty"`
	Version     string         `json:"version,omitempty"`
	Step        string         `json:"step,omitempty"`
	Message     string         `json:"message,omitempty"`
	Attempt     int            `json:"attempt,omitempty"`

	At    time.Time `json:"at,omitzero"`
	Since time.Time `json:"since,omitzero"`

	// TaskWhy is the task job's explanation, for the task reasons.
	TaskWhy *Explanation `json:"task_why,omitempty"`
}

// WorkflowExplanation is why a workflow's run is not making progress, as the store's
// state says at Now.
type WorkflowExplanation struct {
	ID     string         `json:"id"`
	RunID  string         `json:"run"`
	Status WorkflowStatus `json:"status"`
	Now    time.Time      `json:"now"`
	// Reasons are every reason that applies, most decisive first; never empty.
	Reasons []WorkflowReason `json:"reasons"`
}

// WhyWorkflow explains why a workflow's run is not making progress: closed, paused,
// sleeping on a timer, awaiting a signal, waiting for a step job or a child, or its
// task job not running (with that job's own reasons, from Why) or running. It reads
// the workflow's row, armed timers, step jobs and the current run's history with plain
// reads, then the task job (or the step jobs) with Why: the reads are not one snapshot, so a run that moves meanwhile may show a
// mix of two moments, as any listing does. It returns an error matching
// ErrWorkflowNotFound for an id with no workflow.
func (s *Store) WhyWorkflow(ctx context.Context, id string) (*WorkflowExplanation, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	if err := validateRequired("id", id, true); err != nil {
		return nil, err
	}
	row, err := s.GetWorkflow(ctx, id)
	if err != nil {
		return nil, err
	}
	task, err := s.rdb.HGet(ctx, s.keys.Workflow(id), "task").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	timers, err := s.rdb.HGetAll(ctx, s.keys.WorkflowTimers(id)).Result()
	if err != nil {
		return nil, err
	}
	stepJobs, err := s.rdb.HGetAll(ctx, s.keys.WorkflowSteps(id)).Result()
	if err != nil {
		return nil, err
	}
	// The current run's events alone: the earlier runs of a chain continued as new say
	// nothing of why this one waits, and a long chain would make every why read them all.
	var history []Event
	for from := max(row.RunStartSeq, 1); from != 0 && from <= row.Head; {
		page, next, err := s.ReadHistoryFrom(ctx, id, from, maxPage)
		if err != nil {
			return nil, err
		}
		history = append(history, page...)
		from = next
	}
	now, err := s.Now(ctx)
	if err != nil {
		return nil, err
	}
	e := &WorkflowExplanation{ID: id, RunID: row.RunID, Status: row.Status, Now: now}
	switch row.Status {
	case WorkflowRunning, WorkflowPaused:
	default:
		e.Reasons = []WorkflowReason{{Reason: WhyWorkflowClosed, Status: row.Status, At: row.ClosedAt}}
		return e, nil
	}
	run := history // a history written with Append alone has no RunStartSeq: find its run
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Kind == EventWorkflowStarted {
			run = history[i:]
			break
		}
	}
	bySeq := make(map[int64]Event, len(run))
	var pausedAt time.Time
	var children []Event
	ended := map[string]bool{}
	scheduled := map[string]time.Time{} // step -> when its latest step job was scheduled
	for _, ev := range run {
		bySeq[ev.Seq] = ev
		switch ev.Kind {
		case EventStepScheduled:
			scheduled[ev.Name] = ev.RecordedAt
		case EventWorkflowPaused:
			pausedAt = ev.RecordedAt
		case EventChildStarted:
			children = append(children, ev)
		case EventChildCompleted, EventChildFailed:
			ended[ev.ChildWorkflowID] = true
		}
	}
	if row.Status == WorkflowPaused {
		e.Reasons = append(e.Reasons, WorkflowReason{Reason: WhyWorkflowPaused, Since: pausedAt})
	}
	if task != "" {
		r, err := s.taskReason(ctx, task, row.PackageVersion)
		if err != nil {
			return nil, err
		}
		e.Reasons = append(e.Reasons, r)
		return e, nil
	}
	waits, err := timerReasons(timers, bySeq)
	if err != nil {
		return nil, fmt.Errorf("headgate: why workflow %q: %w", id, err)
	}
	e.Reasons = append(e.Reasons, waits...)
	for _, step := range slices.Sorted(maps.Keys(stepJobs)) {
		r := WorkflowReason{Reason: WhyWorkflowWaitingForStepJob, Step: step, Task: stepJobs[step], Version: row.PackageVersion,
			Since: scheduled[step]}
		why, err := s.Why(ctx, r.Task, nil)
		switch {
		case err == nil:
			r.TaskWhy = why
		case !errors.Is(err, ErrJobNotFound):
			return nil, fmt.Errorf("headgate: why workflow step job %q: %w", r.Task, err)
		}
		e.Reasons = append(e.Reasons, r)
	}
	for _, c := range children {
		if ended[c.ChildWorkflowID] {
			continue
		}
		r := WorkflowReason{Reason: WhyWorkflowWaitingForChild, Child: c.ChildWorkflowID, ChildRun: c.ChildRunID, Since: c.RecordedAt}
		child, err := s.GetWorkflow(ctx, c.ChildWorkflowID)
		switch {
		case err == nil:
			r.ChildStatus = child.Status
		case !errors.Is(err, ErrWorkflowNotFound):
			return nil, err
		}
		e.Reasons = append(e.Reasons, r)
	}
	if len(e.Reasons) == 0 {
		e.Reasons = []WorkflowReason{{Reason: WhyWorkflowAwaitingSignal}}
	}
	return e, nil
}

// taskReason is the reason of a run on package version (or none) with an outstanding
// task job: running or not, with the job's own explanation.
func (s *Store) taskReason(ctx context.Context, task, version string) (WorkflowReason, error) {
	why, err := s.Why(ctx, task, nil)
	if err != nil {
		return WorkflowReason{}, fmt.Errorf("headgate: why workflow task %q: %w", task, err)
	}
	r := WorkflowReason{Reason: WhyWorkflowTaskNotRunning, Task: task, Version: version, TaskWhy: why}
	if why.State == StateRunning {
		r.Reason = WhyWorkflowRunning
	}
	return r, nil
}

// timerReasons are the sleeps, awaits and step retries of the run's armed timers (timer
// id -> "<fire ms> <armed seq>"), soonest first; an await's timer is
// "await/<scope><signal>#<n>", a step retry's "retry/<step>/<attempt>".
func timerReasons(timers map[string]string, bySeq map[int64]Event) ([]WorkflowReason, error) {
	var out []WorkflowReason
	for timer, v := range timers {
		fire, seq, ok := strings.Cut(v, " ")
		fireMs, err1 := strconv.ParseInt(fire, 10, 64)
		armed, err2 := strconv.ParseInt(seq, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("timer %q holds %q, not \"<fire ms> <armed seq>\"", timer, v)
		}
		ev := bySeq[armed]
		r := WorkflowReason{Reason: WhyWorkflowSleeping, Timer: timer, At: time.UnixMilli(fireMs), Since: ev.RecordedAt}
		if key, isAwait := strings.CutPrefix(timer, "await/"); isAwait {
			r.Reason = WhyWorkflowAwaitingSignal
			if i := strings.LastIndexByte(key, '#'); i >= 0 {
				key = key[:i]
			}
			r.Signal = key[strings.LastIndexByte(key, '/')+1:]
		} else if strings.HasPrefix(timer, "retry/") && ev.Kind == EventStepFailed {
			r.Reason, r.Step, r.Attempt = WhyWorkflowStepRetry, ev.Name, ev.Attempt
			if ev.Error != nil {
				r.Message = ev.Error.Message
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].Timer < out[j].Timer
	})
	return out, nil
}

// Sentence says the reason in words, with times relative to now.
func (r WorkflowReason) Sentence(now time.Time) string {
	switch r.Reason {
	case WhyWorkflowClosed:
		return fmt.Sprintf("its run closed %s at %s", r.Status, whenFrom(r.At, now))
	case WhyWorkflowPaused:
		return "it was paused at " + whenFrom(r.Since, now) + "; its tasks are held until it is resumed"
	case WhyWorkflowSleeping:
		return fmt.Sprintf("it sleeps: timer %s fires at %s", r.Timer, whenFrom(r.At, now))
	case WhyWorkflowAwaitingSignal:
		if r.Signal == "" {
			return "it awaits a signal with no timeout (no task, timer, step job or child is outstanding)"
		}
		return fmt.Sprintf("it awaits signal %s since %s; its timeout fires at %s", r.Signal, whenFrom(r.Since, now), whenFrom(r.At, now))
	case WhyWorkflowStepRetry:
		return fmt.Sprintf("its step %s failed attempt %d (%s); timer %s retries it at %s", r.Step, r.Attempt, r.Message, r.Timer, whenFrom(r.At, now))
	case WhyWorkflowWaitingForChild:
		status := string(r.ChildStatus)
		if status == "" {
			status = "not found"
		}
		return fmt.Sprintf("it waits for child workflow %s (%s) since %s", r.Child, status, whenFrom(r.Since, now))
	case WhyWorkflowTaskNotRunning:
		s := fmt.Sprintf("its task job %s is not running (%s)", r.Task, r.TaskWhy.State)
		if r.Version != "" && slices.ContainsFunc(r.TaskWhy.Reasons, func(tr Reason) bool { return tr.Reason == WhyNoLiveWorker }) {
			s += fmt.Sprintf(": no worker serves version %s", r.Version)
		}
		return s
	case WhyWorkflowRunning:
		return fmt.Sprintf("its task job %s is running", r.Task)
	case WhyWorkflowWaitingForStepJob:
		s := fmt.Sprintf("it waits for its step %s, scheduled at %s as job %s", r.Step, whenFrom(r.Since, now), r.Task)
		switch {
		case r.TaskWhy == nil:
			s += " (the job is gone)"
		case r.TaskWhy.State == StateRunning:
			s += ", which is running"
		default:
			s += fmt.Sprintf(", which is not running (%s)", r.TaskWhy.State)
			if r.Version != "" && slices.ContainsFunc(r.TaskWhy.Reasons, func(tr Reason) bool { return tr.Reason == WhyNoLiveWorker }) {
				s += fmt.Sprintf(": no worker serves version %s", r.Version)
			}
		}
		return s
	}
	return string(r.Reason)
}

// String is the explanation in words, one line a reason, a task job's own reasons
// indented under it.
func (e *WorkflowExplanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workflow %s (run %s) is %s:\n", e.ID, e.RunID, e.Status)
	for _, r := range e.Reasons {
		b.WriteString("  - " + r.Sentence(e.Now) + "\n")
		if r.TaskWhy != nil {
			for _, tr := range r.TaskWhy.Reasons {
				b.WriteString("      - " + tr.Sentence(r.TaskWhy.Now) + "\n")
			}
		}
	}
	return b.String()
}
