package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// logLine is one record a logCapture received, with its attributes (those added with
// Logger.With included) as text.
type logLine struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// logCapture is a slog handler that keeps every record, for tests that check what the
// worker logs.
type logCapture struct {
	mu    *sync.Mutex
	lines *[]logLine
	added chan struct{} // signalled (capacity 1) when a line is added
	attrs []slog.Attr
}

func newLogCapture() *logCapture {
	return &logCapture{mu: new(sync.Mutex), lines: new([]logLine), added: make(chan struct{}, 1)}
}

func (c *logCapture) logger() *slog.Logger { return slog.New(c) }

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	l := logLine{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range c.attrs {
		l.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		l.Attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	*c.lines = append(*c.lines, l)
	c.mu.Unlock()
	select {
	case c.added <- struct{}{}:
	default:
	}
	return nil
}

func (c *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	d := *c
	d.attrs = append(append([]slog.Attr(nil), c.attrs...), as...)
	return &d
}

func (c *logCapture) WithGroup(string) slog.Handler { return c }

// matching returns the lines at level whose message contains msg.
func (c *logCapture) matching(level slog.Level, msg string) []logLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logLine
	for _, l := range *c.lines {
		if l.Level == level && strings.Contains(l.Msg, msg) {
			out = append(out, l)
		}
	}
	return out
}

// wait waits until at least n lines at level contain msg, and returns them.
func (c *logCapture) wait(t *testing.T, n int, level slog.Level, msg string) []logLine {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		if ls := c.matching(level, msg); len(ls) >= n {
			return ls
		}
		select {
		case <-c.added:
		case <-timeout:
			t.Fatalf("want %d %s lines containing %q within %s, have %v", n, level, msg, waitLimit, c.all())
		}
	}
}

func (c *logCapture) all() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, l := range *c.lines {
		fmt.Fprintf(&b, "\n  %s %q %v", l.Level, l.Msg, l.Attrs)
	}
	return b.String()
}

// checkJobFields reports the structured fields of an attempt's log line that differ from
// want.
func checkJobFields(t *testing.T, l logLine, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if l.Attrs[k] != v {
			t.Errorf("log line %q: %s = %q, want %q (all: %v)", l.Msg, k, l.Attrs[k], v, l.Attrs)
		}
	}
}
