package workflow

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/worker"
)

// task is one workflow task: a replay of the run's function from the top over the
// history the task read, with the new work it does collected and committed.
type task struct {
	store  *headgate.Store
	w      *worker.Worker // nil in replay tests
	lease  headgate.LeaseRef
	wfID   string
	row    *headgate.WorkflowSummary
	jobCtx context.Context
	queue  string
	part   string
	replay bool // a replay test: nothing is run or committed

	mu        sync.Mutex
	head      int64            // the history's head as last committed
	committed time.Time        // when the task last committed (or was loaded): the age of what is pending
	history   []headgate.Event // the current run's events
	started   headgate.Event   // its workflow_started

	commands  map[string][]int // scope -> indexes into history of its command events, in order
	cursor    map[string]int   // scope -> commands replayed
	occ       map[string]int   // scope, class and name -> occurrences asked for
	fired     map[string]int64 // timer id -> seq of its timer_fired
	signals   map[string][]headgate.Event
	used      map[string]int // signal name -> signals consumed
	childEnd  map[string]headgate.Event
	cancelSeq int64

	pending  []pendingEvent
	retire   []string
	children []headgate.WorkflowStart
	armed    bool
	stepJobs // steps that run as jobs of their own (StepOptions.Job)

	fatal   error // a non-determinism, a failed checkpoint: the task fails
	blocked bool  // the code waits: the task ends
}

// pendingEvent is an event the task made, not yet committed; arm is a timer armed by it.
type pendingEvent struct {
	e   headgate.Event
	arm *headgate.TimerArm
}

func newTask(wfID string, row *headgate.WorkflowSummary, history []headgate.Event) *task {
	t := &task{wfID: wfID, row: row, history: history, commands: map[string][]int{}, cursor: map[string]int{},
		occ: map[string]int{}, fired: map[string]int64{}, signals: map[string][]headgate.Event{}, used: map[string]int{},
		childEnd: map[string]headgate.Event{}}
	for i, e := range history {
		if _, key, ok := commandOf(e); ok {
			s := scopeOf(key)
			t.commands[s] = append(t.commands[s], i)
		}
		switch e.Kind {
		case headgate.EventWorkflowStarted:
			t.started = e
		case headgate.EventTimerFired:
			t.fired[e.TimerID] = e.Seq
		case headgate.EventSignalReceived:
			t.signals[e.Name] = append(t.signals[e.Name], e)
		case headgate.EventChildCompleted, headgate.EventChildFailed:
			t.childEnd[e.ChildWorkflowID] = e
		case headgate.EventWorkflowCancelRequested:
			if t.cancelSeq == 0 {
				t.cancelSeq = e.Seq
			}
		}
	}
	if n := len(history); n > 0 {
		t.head = history[n-1].Seq
	}
	return t
}

// Command classes: what the code asked for, as the history records it.
const (
	classStep  = "step"
	classSleep = "sleep"
	classAwait = "await"
	classChild = "child"
	classNow   = "now"
	classPatch = "patch"
)

// commandOf returns the class and scoped name of an event the code's commands made, or
// false for the events that come from outside (signals, timers fired, ...).
func commandOf(e headgate.Event) (class, key string, ok bool) {
	switch e.Kind {
	case headgate.EventStepScheduled, headgate.EventStepCompleted, headgate.EventStepFailed:
		return classStep, e.Name, true
	case headgate.EventTimerStarted:
		class, _, _ := strings.Cut(e.TimerID, "/")
		return class, e.Name, true
	case headgate.EventChildStarted:
		return classChild, e.Name, true
	case headgate.EventMarkerRecorded:
		return e.Reason, e.Name, true
	}
	return "", "", false
}

// scopeOf is the scope part of a scoped name: up to its last '/'.
func scopeOf(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i+1]
	}
	return ""
}

// peek returns the next command event of the scope not replayed yet.
func (t *task) peek(scope string) (headgate.Event, bool) {
	list := t.commands[scope]
	i := t.cursor[scope]
	if i >= len(list) {
		return headgate.Event{}, false
	}
	return t.history[list[i]], true
}

// next names the next occurrence of a command: "<scope><name>#<n>".
func (t *task) next(scope, class, name string) string {
	k := scope + "\x00" + class + "\x00" + name
	t.occ[k]++
	return fmt.Sprintf("%s%s#%d", scope, name, t.occ[k])
}

// match replays the next command of the scope when the history has one: it must be of
// the class and key asked for, else the task fails with a NonDeterminismError. It
// returns the event, or false when the scope's history is replayed and the command is
// new.
func (t *task) match(scope, class, key string) (headgate.Event, bool) {
	e, ok := t.peek(scope)
	if !ok {
		return headgate.Event{}, false
	}
	hc, hk, _ := commandOf(e)
	if hc != class || hk != key {
		code := strings.TrimPrefix(key, scope)
		if hc != class {
			code = class + " " + code
		}
		t.fail(&NonDeterminismError{WorkflowID: t.wfID, History: hc + " " + strings.TrimPrefix(hk, scope), Seq: e.Seq, Code: code})
	}
	t.cursor[scope]++
	return e, true
}

// fail ends the task with err (unlocking t.mu, which the caller holds).
func (t *task) fail(err error) {
	if t.fatal == nil {
		t.fatal = err
	}
	t.mu.Unlock()
	runtime.Goexit()
}

// block ends the task because the code waits (unlocking t.mu).
func (t *task) block() {
	t.blocked = true
	t.mu.Unlock()
	runtime.Goexit()
}

// record adds a new event of the code's; arm is the timer it arms, if any. It returns
// the sequence the event will have once committed.
func (t *task) record(e headgate.Event, arm *headgate.TimerArm) int64 {
	t.pending = append(t.pending, pendingEvent{e: e, arm: arm})
	return t.head + int64(len(t.pending))
}

// CheckpointAfter bounds how much finished step work a task holds uncommitted: after a
// step, the task commits what is pending (a checkpoint) when its last commit is at least
// this old. Steps that finish sooner ride in the task's next commit (the one that ends
// the task, or a later checkpoint), so a workflow of quick steps costs one commit per
// task instead of one per step. A worker that dies before that commit leaves those steps
// to run again on the next task: steps are at least once either way.
const CheckpointAfter = 100 * time.Millisecond

// clock is the tasks' wall clock for CheckpointAfter; tests replace it.
var clock = func() time.Time { return (*clockFn.Load())() }

var clockFn atomic.Pointer[func() time.Time]

func init() {
	now := time.Now
	clockFn.Store(&now)
}

// stepDone commits what is pending after a step when the step asks for it
// (StepOptions.Checkpoint) or the uncommitted work is CheckpointAfter old. The caller
// holds t.mu.
func (t *task) stepDone(always bool) {
	if always || clock().Sub(t.committed) >= CheckpointAfter || len(t.pending) >= headgate.MaxAppendEvents/2 {
		t.checkpoint()
	}
}

// checkpoint commits the task's new events without ending it, so that work done (a
// step's result) survives a crash of the worker. The caller holds t.mu.
func (t *task) checkpoint() {
	if t.replay || len(t.pending) == 0 && len(t.children) == 0 && len(t.retire) == 0 {
		return
	}
	if _, err := t.commitLocked(false, false, nil); err != nil {
		t.fail(fmt.Errorf("workflow %q: checkpoint: %w", t.wfID, err))
	}
}

// commitLocked commits what is pending; the caller holds t.mu.
func (t *task) commitLocked(end, next bool, parent *headgate.Event) (*headgate.TaskCommitted, error) {
	c := headgate.TaskCommit{WorkflowID: t.wfID, Lease: t.lease, ExpectedHead: t.head, End: end, NextTask: next,
		RetireTimers: t.retire, Children: t.children, ParentEvent: parent, StepJobs: t.scheduled, GiveUpSteps: t.givenUp}
	for i, p := range t.pending {
		e := p.e
		e.Seq = t.head + int64(i) + 1
		c.Events = append(c.Events, e)
		if p.arm != nil {
			a := *p.arm
			a.ArmedSeq = e.Seq
			c.ArmTimers = append(c.ArmTimers, a)
		}
	}
	res, err := t.store.CommitWorkflowTask(t.jobCtx, c)
	if err != nil {
		return nil, err
	}
	if len(c.ArmTimers) > 0 {
		t.armed = true
	}
	t.head, t.committed = res.Head, clock()
	t.pending, t.retire, t.children, t.scheduled = nil, nil, nil, nil
	return res, nil
}

// goRun runs fn on a goroutine of its own, so that a wait can end it (runtime.Goexit)
// wherever it is; it returns once fn returned or ended. A panic of fn fails the task.
func (t *task) goRun(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				buf := make([]byte, 8<<10)
				buf = buf[:runtime.Stack(buf, false)]
				t.mu.Lock()
				if t.fatal == nil {
					t.fatal = fmt.Errorf("workflow %q: panic: %v\n\n%s", t.wfID, r, buf)
				}
				t.mu.Unlock()
			}
		}()
		fn()
	}()
	<-done
}

// checkName refuses a name the scoped naming cannot hold, with an
// *headgate.InvalidError naming field (the argument that carried it).
func checkName(field, name string) error { return headgate.ValidateWorkflowName(field, name) }

// armedTimers returns the timers of the run that are armed and have not fired: sleeps',
// awaits' and steps' retries, in the history and made by this task. The caller holds
// t.mu.
func (t *task) armedTimers() []string {
	var out []string
	seen := map[string]bool{}
	add := func(e headgate.Event) {
		id := e.TimerID
		if e.Kind == headgate.EventStepFailed && !e.FireAt.IsZero() {
			id = retryTimer(e.Name, e.Attempt)
		}
		if id != "" && t.fired[id] == 0 && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, e := range t.history {
		if e.Kind == headgate.EventTimerStarted || e.Kind == headgate.EventStepFailed {
			add(e)
		}
	}
	for _, p := range t.pending {
		if p.arm != nil {
			add(headgate.Event{TimerID: p.arm.TimerID})
		}
	}
	return out
}
