package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/worker"
)

// TaskKind is the job kind of a workflow type's tasks: "workflow:<type>".
func TaskKind(workflowType string) string { return "workflow:" + workflowType }

// Register registers fn as the code of a workflow type on w, which then serves the
// type's tasks beside its jobs: they are headgate jobs on the workflows' queues, so
// partitions, fairness, rate classes and quarantine apply to them. w also serves the
// type's step jobs (StepKind), for the steps that run as jobs of their own on the
// queues w serves. fn's input and output travel as JSON. Each task re-runs fn from the
// top over the run's history (see the package documentation); fn must be deterministic
// outside Step. Register panics, like worker.Handle, when the type is already
// registered or w has started.
func Register[In, Out any](w *worker.Worker, workflowType string, fn func(ctx Context, in In) (Out, error)) {
	if err := checkName("workflowType", workflowType); err != nil {
		panic(fmt.Sprintf("workflow.Register: workflow type: %v", err))
	}
	body := jsonBody(fn)
	worker.HandleFunc(w, TaskKind(workflowType), func(ctx context.Context, claim *headgate.Claim) error {
		return runTask(ctx, w, claim, body)
	})
	registerStepJobs(w, workflowType, body)
}

// runTask runs one task of a workflow and commits it. It returns worker.Settled when the
// commit acked the task, or the error that fails the task's attempt (retried with
// backoff: a non-determinism, a panic of the code, a lost commit).
func runTask(ctx context.Context, w *worker.Worker, claim *headgate.Claim, body func(Context, []byte) ([]byte, error)) (err error) {
	store := w.Store()
	wfID := string(claim.Envelope.Payload)
	t, err := loadTask(ctx, store, wfID)
	if errors.Is(err, headgate.ErrWorkflowNotFound) {
		return worker.Skip(fmt.Sprintf("workflow %q has no history", wfID))
	}
	if err != nil {
		return err
	}
	ctx, endTask := observeTask(ctx, t)
	defer func() { endTask(err) }()
	t.w, t.lease, t.jobCtx = w, claim.LeaseRef(), ctx
	// The workflow's own queue, not the task's: a child goes on its version's task
	// queue of it.
	t.queue, t.part = t.row.Queue, claim.Envelope.PartitionKey
	if t.row.Status.Closed() || t.row.Status == headgate.WorkflowPaused {
		// Nothing to run: a task enqueued before the run closed, or admitted as a
		// pause arrived.
		if _, err := t.commitLocked(true, false, nil); err != nil {
			return err
		}
		return worker.Settled()
	}
	end, next, parent, err := t.execute(body)
	if err != nil {
		return err
	}
	if end != nil && end.Kind == headgate.EventWorkflowCancelled {
		if err := t.cancelChildren(); err != nil {
			return err
		}
	}
	version := t.row.PackageVersion
	if end != nil && end.Kind == headgate.EventWorkflowContinuedAsNew {
		// The new run starts on the type's current route: how a chain moves to new code.
		if version, err = nextRunVersion(ctx, store, t.row); err != nil {
			return fmt.Errorf("workflow %q: continue as new: %w", wfID, err)
		}
	}
	t.mu.Lock()
	if end != nil {
		// A run that ends leaves no timer armed (a new run starts with none).
		t.retire = append(t.retire, t.armedTimers()...)
		t.record(*end, nil)
		if end.Kind == headgate.EventWorkflowContinuedAsNew {
			t.record(headgate.Event{Kind: headgate.EventWorkflowStarted, WorkflowType: t.row.WorkflowType,
				RunID: end.RunID, Input: end.Input, ParentWorkflowID: t.row.ParentWorkflowID,
				ParentRunID: t.row.ParentRunID, PackageVersion: version}, nil)
			// The signals no await took are the new run's: a signal is kept until the
			// code awaits it, whichever run that is. As many as one commit holds: the
			// commit must go through, or the run would never move on.
			unread := t.unreadSignals()
			unread = unread[:min(len(unread), headgate.MaxAppendEvents-len(t.pending))]
			for _, e := range unread {
				t.record(headgate.Event{Kind: headgate.EventSignalReceived, Name: e.Name, Payload: e.Payload}, nil)
			}
		}
	}
	_, err = t.commitLocked(true, next, parent)
	armed := t.armed
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("workflow %q: commit: %w", wfID, err)
	}
	if armed {
		worker.NudgeTimers(w)
	}
	return worker.Settled()
}

// loadTask reads a workflow's row and its current run's history.
func loadTask(ctx context.Context, store *headgate.Store, wfID string) (*task, error) {
	row, err := store.GetWorkflow(ctx, wfID)
	if err != nil {
		return nil, err
	}
	var history []headgate.Event
	for from := max(row.RunStartSeq, 1); from != 0 && from <= row.Head; {
		// Only up to the head the row names: a read asks for every seq of its page.
		page, next, err := store.ReadHistoryFrom(ctx, wfID, from, int(min(row.Head-from+1, 1000)))
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			if e.Seq <= row.Head {
				history = append(history, e)
			}
		}
		from = next
	}
	t := newTask(wfID, row, history)
	t.store = store
	t.head, t.committed = row.Head, clock()
	return t, nil
}

// execute runs the function over the history. It returns the event that closes the run
// (nil while the code waits), whether a next task is due, the event for the parent, or
// the error that fails the task.
func (t *task) execute(body func(Context, []byte) ([]byte, error)) (end *headgate.Event, next bool, parent *headgate.Event, err error) {
	var (
		out      []byte
		ferr     error
		returned bool
	)
	root := newContext(t, "", false)
	t.goRun(func() {
		out, ferr = body(root, t.started.Input)
		returned = true
	})
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fatal != nil {
		return nil, false, nil, t.fatal
	}
	if !returned {
		return nil, false, nil, nil
	}
	if t.cancelSeq == 0 {
		// A cancelled run's code stops at its next step wherever that is; any other
		// run's code that returns before it replayed every command of its history took
		// another path than the one the history recorded.
		if err := t.unreplayed(); err != nil {
			return nil, false, nil, err
		}
	}
	row := t.row
	var can *continueAsNew
	switch {
	case errors.As(ferr, &can):
		return &headgate.Event{Kind: headgate.EventWorkflowContinuedAsNew, RunID: headgate.NewRunID(), Input: can.input},
			true, nil, nil
	case ferr != nil:
		kind := headgate.EventWorkflowFailed
		if t.cancelSeq > 0 {
			kind = headgate.EventWorkflowCancelled
		}
		werr := &headgate.WorkflowError{Message: ferr.Error()}
		end = &headgate.Event{Kind: kind, Error: werr}
		if row.ParentWorkflowID != "" {
			parent = &headgate.Event{Kind: headgate.EventChildFailed, ChildWorkflowID: t.wfID, ChildRunID: row.RunID, Error: werr}
		}
		return end, false, parent, nil
	}
	end = &headgate.Event{Kind: headgate.EventWorkflowCompleted, Result: out}
	if row.ParentWorkflowID != "" {
		parent = &headgate.Event{Kind: headgate.EventChildCompleted, ChildWorkflowID: t.wfID, ChildRunID: row.RunID, Result: out}
	}
	return end, false, parent, nil
}

// unreplayed returns the *NonDeterminismError of the earliest command of the history
// that the code, having returned, did not replay, or nil. The caller holds t.mu.
func (t *task) unreplayed() error {
	first := -1
	for scope, list := range t.commands {
		if i := t.cursor[scope]; i < len(list) && (first < 0 || list[i] < first) {
			first = list[i]
		}
	}
	if first < 0 {
		return nil
	}
	e := t.history[first]
	class, key, _ := commandOf(e)
	return &NonDeterminismError{WorkflowID: t.wfID, History: class + " " + strings.TrimPrefix(key, scopeOf(key)), Seq: e.Seq,
		Code: "nothing more (it returned)"}
}

// jsonBody adapts a typed workflow function to the runtime's, which passes the input
// and takes the result as JSON.
func jsonBody[In, Out any](fn func(ctx Context, in In) (Out, error)) func(Context, []byte) ([]byte, error) {
	return func(ctx Context, input []byte) ([]byte, error) {
		var in In
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, fmt.Errorf("workflow: decode the input: %w", err)
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
}

// cancelChildren asks the children the run started that have not ended to cancel, as
// the run closes cancelled. It runs before the closing commit, so a task that dies
// between the two cancels them again on its retry (a cancel of a closed or already
// cancelling child changes nothing).
func (t *task) cancelChildren() error {
	t.mu.Lock()
	var open []string
	for _, e := range t.history {
		if e.Kind == headgate.EventChildStarted {
			open = append(open, e.ChildWorkflowID)
		}
	}
	for _, p := range t.pending {
		if p.e.Kind == headgate.EventChildStarted {
			open = append(open, p.e.ChildWorkflowID)
		}
	}
	ended := t.childEnd
	t.mu.Unlock()
	for _, id := range open {
		if _, ok := ended[id]; ok {
			continue
		}
		_, err := t.store.CancelWorkflow(t.jobCtx, id, "its parent "+t.wfID+" was cancelled", "")
		var closed *headgate.WorkflowClosedError
		if err != nil && !errors.As(err, &closed) && !errors.Is(err, headgate.ErrWorkflowNotFound) {
			return fmt.Errorf("workflow %q: cancel child %q: %w", t.wfID, id, err)
		}
	}
	return nil
}
