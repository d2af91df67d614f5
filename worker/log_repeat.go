package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// maxRepeatKeys bounds the failures the repeat limiter tracks at once. When that many
// distinct failures were seen within one interval, further new ones are logged
// untracked: a flood of distinct errors is logged rather than remembered without bound.
const maxRepeatKeys = 1024

// repeatLimiter thins the log lines of failures that repeat (Config.LogRepeatInterval).
type repeatLimiter struct {
	interval time.Duration
	now      func() time.Time // time.Now; tests step it

	mu   sync.Mutex
	seen map[string]*repeat
}

type repeat struct {
	last time.Time // when the last line for it was logged
	left int       // lines left out since
}

func newRepeatLimiter(interval time.Duration) *repeatLimiter {
	return &repeatLimiter{interval: interval, now: time.Now, seen: map[string]*repeat{}}
}

// allow reports whether a line for key may be logged now and, if so, how many lines for
// it were left out since the last one.
func (l *repeatLimiter) allow(key string) (ok bool, left int) {
	if l.interval < 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, seen := l.seen[key]; seen {
		if now.Sub(r.last) < l.interval {
			r.left++
			return false, 0
		}
		left, r.last, r.left = r.left, now, 0
		return true, left
	}
	if len(l.seen) >= maxRepeatKeys {
		for k, r := range l.seen {
			if now.Sub(r.last) >= l.interval {
				delete(l.seen, k)
			}
		}
		if len(l.seen) >= maxRepeatKeys {
			return true, 0
		}
	}
	l.seen[key] = &repeat{last: now}
	return true, 0
}

// logRepeated writes a failure's line unless the same failure (key) was logged within
// Config.LogRepeatInterval.
func (w *Worker) logRepeated(level slog.Level, key, msg string, attrs []any) {
	if !w.log.Enabled(context.Background(), level) {
		return
	}
	ok, left := w.repeats.allow(level.String() + "\x00" + key)
	if !ok {
		return
	}
	if left > 0 {
		attrs = append(attrs, "repeated", left)
	}
	w.log.Log(context.Background(), level, msg, attrs...)
}
