package workflow

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/headgate/headgate"
)

// Sleep waits durably for d: the first time the code gets here a timer is armed on the
// store clock and the task ends, freeing its worker slot; when the timer fires (the
// workers' maintenance duty fires due timers) the run's next task replays past it. A
// cancellation of the run first ends the wait with ErrCancelled.
func Sleep(ctx Context, name string, d time.Duration) error {
	if err := checkName("name", name); err != nil {
		return err
	}
	c := ctx.state()
	t := c.t
	t.mu.Lock()
	key := t.next(c.scope, classSleep, name)
	timer := classSleep + "/" + key
	if err := t.startTimer(c, classSleep, key, timer, d); err != nil {
		t.mu.Unlock()
		return err
	}
	fired := t.fired[timer]
	if t.cancelWins(c, fired) {
		t.retire = append(t.retire, timer)
		t.mu.Unlock()
		return ErrCancelled
	}
	if fired == 0 {
		t.block()
	}
	t.mu.Unlock()
	return nil
}

// startTimer replays or makes the timer_started event of a sleep or an await's timeout.
// A timer of no time (d <= 0) is due at once: the task fires it itself, recording
// timer_started (with no fire time) and timer_fired without arming anything, so it
// costs no timer round trip and no second task. The caller holds t.mu.
func (t *task) startTimer(c *wctx, class, key, timer string, d time.Duration) error {
	if _, ok := t.match(c.scope, class, key); ok {
		return nil
	}
	if c.cancelledLocked() {
		return ErrCancelled
	}
	if t.replay {
		t.block()
	}
	if d <= 0 {
		t.record(headgate.Event{Kind: headgate.EventTimerStarted, Name: key, TimerID: timer}, nil)
		t.fired[timer] = t.record(headgate.Event{Kind: headgate.EventTimerFired, TimerID: timer}, nil)
		return nil
	}
	now, err := t.store.Now(t.jobCtx)
	if err != nil {
		t.fail(fmt.Errorf("workflow: %s %s: read the store clock: %w", class, key, err))
	}
	fire := now.Add(d)
	t.record(headgate.Event{Kind: headgate.EventTimerStarted, Name: key, TimerID: timer, FireAt: fire},
		&headgate.TimerArm{TimerID: timer, FireAt: fire})
	return nil
}

// cancelWins reports whether a cancellation comes before the event (seq, 0 = none) that
// would end a wait. The caller holds t.mu.
func (t *task) cancelWins(c *wctx, seq int64) bool {
	return c.cancelledLocked() && (seq == 0 || t.cancelSeq < seq)
}

// Await waits for the next signal of the given name (sent with Client.Signal) and
// returns its payload decoded from JSON, with true; or, when timeout > 0 and it passes
// first, the zero value and false. A signal sent before the code reaches the await is
// kept and returned at once. Signals of one name are consumed in the order they arrived,
// by the awaits of that name in the order the code makes them: await a name in one
// Parallel branch at a time, or which branch gets which signal depends on timing. Like
// Sleep, a wait ends the task and frees its slot.
func Await[T any](ctx Context, signal string, timeout time.Duration) (T, bool, error) {
	var zero T
	if err := checkName("signal", signal); err != nil {
		return zero, false, err
	}
	c := ctx.state()
	t := c.t
	t.mu.Lock()
	key := t.next(c.scope, classAwait, signal)
	timer := ""
	if timeout > 0 {
		timer = classAwait + "/" + key
		if err := t.startTimer(c, classAwait, key, timer, timeout); err != nil {
			t.mu.Unlock()
			return zero, false, err
		}
	}
	var sig *headgate.Event
	if list := t.signals[signal]; t.used[signal] < len(list) {
		sig = &list[t.used[signal]]
	}
	fired := int64(0)
	if timer != "" {
		fired = t.fired[timer]
	}
	first := fired
	if sig != nil && (first == 0 || sig.Seq < first) {
		first = sig.Seq
	}
	if t.cancelWins(c, first) {
		if timer != "" {
			t.retire = append(t.retire, timer)
		}
		t.mu.Unlock()
		return zero, false, ErrCancelled
	}
	switch {
	case sig != nil && sig.Seq == first:
		t.used[signal]++
		if timer != "" && fired == 0 {
			t.retire = append(t.retire, timer)
		}
		t.mu.Unlock()
		var v T
		if err := json.Unmarshal(sig.Payload, &v); err != nil {
			return zero, false, fmt.Errorf("workflow: signal %q: decode the payload: %w", signal, err)
		}
		return v, true, nil
	case fired != 0:
		t.mu.Unlock()
		return zero, false, nil
	}
	t.block()
	panic("unreachable")
}

// Child starts a child workflow of the given type with input in (JSON), in the same
// namespace and on the parent's queue and partition, and waits for its outcome: its
// result decoded from JSON, or a *ChildError when it failed, was cancelled or
// terminated. The child's id is "<parent id>/<name>#<n>" in the first run of the
// parent's chain, and "<parent id>/<run id>/<name>#<n>" in a run started by
// ContinueAsNew, so each run's children are workflows of their own. Waiting ends the
// task.
func Child[T any](ctx Context, name, workflowType string, in any) (T, error) {
	var zero T
	if err := checkName("name", name); err != nil {
		return zero, err
	}
	if err := checkName("workflowType", workflowType); err != nil {
		return zero, err // no worker can register it: the child would never run
	}
	c := ctx.state()
	t := c.t
	t.mu.Lock()
	key := t.next(c.scope, classChild, name)
	childID := t.childID(key)
	if e, ok := t.match(c.scope, classChild, key); ok {
		childID = e.ChildWorkflowID // the id the child was started under
	} else {
		if c.cancelledLocked() {
			t.mu.Unlock()
			return zero, ErrCancelled
		}
		if t.replay {
			t.block()
		}
		if len(childID) > headgate.MaxNameBytes {
			// The commit would refuse it, failing every task of the run.
			t.mu.Unlock()
			return zero, &headgate.InvalidError{Field: "name", Reason: fmt.Sprintf(
				"the child's id %q would be longer than %d bytes", childID, headgate.MaxNameBytes)}
		}
		input, err := json.Marshal(in)
		if err != nil {
			t.mu.Unlock()
			return zero, fmt.Errorf("workflow: child %s: encode the input: %w", key, err)
		}
		run := headgate.NewRunID()
		t.record(headgate.Event{Kind: headgate.EventChildStarted, Name: key, ChildWorkflowID: childID, ChildRunID: run,
			WorkflowType: workflowType}, nil)
		t.children = append(t.children, headgate.WorkflowStart{WorkflowID: childID, WorkflowType: workflowType,
			RunID: run, Input: input, PackageVersion: t.row.PackageVersion, Queue: t.queue, Partition: t.part})
	}
	end, ok := t.childEnd[childID]
	seq := int64(0)
	if ok {
		seq = end.Seq
	}
	if t.cancelWins(c, seq) {
		t.mu.Unlock()
		return zero, ErrCancelled
	}
	if !ok {
		t.block()
	}
	t.mu.Unlock()
	if end.Kind == headgate.EventChildFailed {
		return zero, &ChildError{WorkflowID: childID, Message: errorText(end)}
	}
	var v T
	if err := json.Unmarshal(end.Result, &v); err != nil {
		return zero, fmt.Errorf("workflow: child %s: decode the result: %w", key, err)
	}
	return v, nil
}

// childID is the id of a new child named key (its scope, name and occurrence): under
// the parent's id, and in a run after the chain's first under its run id too, since
// the earlier runs' children of that key have closed and keep their ids.
func (t *task) childID(key string) string {
	if t.started.Seq > 1 {
		return t.wfID + "/" + t.row.RunID + "/" + key
	}
	return t.wfID + "/" + key
}

// unreadSignals returns the run's signals that no await took, in the order they came.
// The caller holds t.mu.
func (t *task) unreadSignals() []headgate.Event {
	var out []headgate.Event
	for name, list := range t.signals {
		out = append(out, list[t.used[name]:]...)
	}
	slices.SortFunc(out, func(a, b headgate.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// Now returns the store time, recorded the first time the code gets here, so every
// replay sees the same time.
func Now(ctx Context) (time.Time, error) {
	c := ctx.state()
	t := c.t
	t.mu.Lock()
	key := t.next(c.scope, classNow, "now")
	if e, ok := t.match(c.scope, classNow, key); ok {
		t.mu.Unlock()
		ms, err := strconv.ParseInt(string(e.Payload), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("workflow: %s: the recorded time %q is not ms", key, e.Payload)
		}
		return time.UnixMilli(ms), nil
	}
	if t.replay {
		t.block()
	}
	now, err := t.store.Now(t.jobCtx)
	if err != nil {
		t.mu.Unlock()
		return time.Time{}, err
	}
	t.record(headgate.Event{Kind: headgate.EventMarkerRecorded, Reason: classNow, Name: key,
		Payload: []byte(strconv.FormatInt(now.UnixMilli(), 10))}, nil)
	t.mu.Unlock()
	return now, nil
}

// Patched reports whether the run takes the new code of a change (true) or keeps
// to the code its history was made with (false): a history that passed this point
// without the change's marker is old; new runs, and runs that reach this point only
// now, record the marker and take the new code. Keep the old branch until no open run
// started before the change.
func Patched(ctx Context, change string) bool {
	c := ctx.state()
	t := c.t
	t.mu.Lock()
	defer t.mu.Unlock()
	key := c.scope + change
	e, ok := t.peek(c.scope)
	if ok {
		if cl, k, _ := commandOf(e); cl == classPatch && k == key {
			t.cursor[c.scope]++
			return true
		}
		return false
	}
	t.record(headgate.Event{Kind: headgate.EventMarkerRecorded, Reason: classPatch, Name: key}, nil)
	return true
}

// ContinueAsNew ends the run and starts a new one of the same workflow id and type with
// input in, in the same chain (a fresh history to replay): return its error from the
// workflow function. It keeps a long-lived workflow's history short. The signals the
// run received and no await took go to the new run, in the order they came (the first
// headgate.MaxAppendEvents less the two events that end the run and start the next:
// await them before continuing as new when more can wait).
func ContinueAsNew(ctx Context, in any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("workflow: continue as new: encode the input: %w", err)
	}
	return &continueAsNew{input: b}
}

// Parallel runs fn(ctx, i) for i in 0..n-1 at once, each branch in a scope of its own
// named "<name>#<k>[<i>]/", so the steps, sleeps and children of the branches are
// matched on replay per branch, whatever order they completed in. It returns when every
// branch returned, with their errors joined in branch order; while any branch waits, the
// task ends and the others' work is kept.
func Parallel(ctx Context, name string, n int, fn func(ctx Context, i int) error) error {
	if err := checkName("name", name); err != nil {
		return err
	}
	if n < 0 {
		return &headgate.InvalidError{Field: "n", Reason: fmt.Sprintf("is %d: a count of branches is not negative", n)}
	}
	c := ctx.state()
	t := c.t
	t.mu.Lock()
	key := t.next(c.scope, "parallel", name)
	t.mu.Unlock()
	errs := make([]error, n)
	finished := make([]bool, n)
	done := make(chan struct{}, n)
	for i := range n {
		bc := newContext(t, fmt.Sprintf("%s[%d]/", key, i), c.noCancel)
		go t.goRun(func() {
			defer func() { done <- struct{}{} }()
			errs[i] = fn(bc, i)
			finished[i] = true
		})
	}
	for range n {
		<-done
	}
	t.mu.Lock()
	for i := range n {
		if !finished[i] {
			if t.fatal != nil {
				t.fail(t.fatal)
			}
			t.block()
		}
	}
	t.mu.Unlock()
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, fmt.Errorf("branch %d: %w", i, err))
		}
	}
	return errors.Join(out...)
}
