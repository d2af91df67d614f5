package workflow

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Context is the context a workflow function runs in. It is a context.Context: its
// values are the task's, and it is done when an operator cancelled the run (Cancel) and
// the run's code has reached that point of its history, so every replay sees the
// cancellation at the same step. Only this package makes Contexts; pass the one the
// function got, or WithoutCancel of it, to the package's functions.
type Context interface {
	context.Context
	state() *wctx
}

// ErrCancelled is what Step, Sleep, Await and Child return, and what Err reports (with
// context.Canceled), once the run was cancelled. A function that returns an error after
// a cancellation closes its run as cancelled; compensation can still run under
// WithoutCancel.
var ErrCancelled = errors.New("workflow: the run was cancelled")

type wctx struct {
	t        *task
	scope    string // prefix of the command names made in this context ("" or "fan#1[0]/")
	noCancel bool

	once sync.Once
	done chan struct{}
}

func (c *wctx) state() *wctx { return c }

func (c *wctx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *wctx) Done() <-chan struct{} {
	if c.Err() != nil {
		c.once.Do(func() { close(c.done) })
	}
	return c.done
}

func (c *wctx) Err() error {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	if c.cancelledLocked() {
		return context.Canceled
	}
	return nil
}

func (c *wctx) Value(key any) any { return c.t.jobCtx.Value(key) }

// cancelledLocked reports whether the code, at this point of its replay, is past the
// cancellation: a cancel was requested and the scope has no earlier command left in the
// history to replay.
func (c *wctx) cancelledLocked() bool {
	t := c.t
	if c.noCancel || t.cancelSeq == 0 {
		return false
	}
	if e, ok := t.peek(c.scope); ok && e.Seq < t.cancelSeq {
		return false
	}
	return true
}

func newContext(t *task, scope string, noCancel bool) *wctx {
	return &wctx{t: t, scope: scope, noCancel: noCancel, done: make(chan struct{})}
}

// WithoutCancel returns a Context that is never cancelled, for compensation: steps that
// undo what a cancelled run did.
func WithoutCancel(ctx Context) Context {
	c := ctx.state()
	return newContext(c.t, c.scope, true)
}
