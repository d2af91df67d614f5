package headgate

import (
	"time"

	"github.com/robfig/cron/v3"
)

// ticker computes a schedule's tick times. Ticks are instants; a cron expression is
// matched against the wall clock of its zone. When the clocks change, an expression
// that names particular hours ("30 2 * * *", @daily) follows the wall clock the way
// cron does: a wall time the clocks skip fires once, at the end of the gap, and a wall
// time that occurs twice fires once, the first time. An expression for every hour
// ("*/15 * * * *", @hourly) follows elapsed time: every matching instant fires.
type ticker struct {
	spec   *cron.SpecSchedule
	loc    *time.Location
	every  time.Duration
	anchor time.Time // of interval ticks
}

// everyHour is the hour mask of an expression that matches all 24 hours.
const everyHour = 1<<24 - 1

// next returns the first tick after t, or the zero time when there is none.
func (k *ticker) next(t time.Time) time.Time {
	if k.spec == nil {
		if t.Before(k.anchor) {
			return k.anchor.Add(k.every)
		}
		n := t.Sub(k.anchor) / k.every
		return k.anchor.Add((n + 1) * k.every)
	}
	c := k.spec.Next(t)
	if w := k.wallNext(t); !w.IsZero() && (c.IsZero() || w.Before(c)) {
		c = w
	}
	if k.spec.Hour&everyHour == everyHour {
		return c
	}
	for !c.IsZero() && k.repeated(c) {
		c = k.spec.Next(c)
	}
	if g := k.gapTick(t, c); !g.IsZero() {
		return g
	}
	return c
}

// wallNext returns the first instant after t whose wall time in the zone matches the
// expression, searched on the wall clock, or the zero time. The parser's own Next steps
// through a day an hour of elapsed time at a time, so where the clocks change by half an
// hour (Australia/Lord_Howe) it passes over that day's every match: a daily tick would be
// lost twice a year. A wall time the clocks skip has no instant, and one they repeat only
// its first: Next finds those, and next takes the earlier of the two.
func (k *ticker) wallNext(t time.Time) time.Time {
	utc := *k.spec
	utc.Location = time.UTC
	w := t.In(k.loc)
	wall := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC)
	for range 4 { // a match that is no instant after t (skipped, or before t): the next one
		m := utc.Next(wall)
		if m.IsZero() {
			return m
		}
		c := time.Date(m.Year(), m.Month(), m.Day(), m.Hour(), m.Minute(), m.Second(), 0, k.loc)
		if cw := c.In(k.loc); cw.Hour() == m.Hour() && cw.Minute() == m.Minute() && c.After(t) {
			return c
		}
		wall = m
	}
	return time.Time{}
}

// repeated reports whether c's wall time already occurred earlier, in the hour the
// clocks went back.
func (k *ticker) repeated(c time.Time) bool {
	c = c.In(k.loc)
	start, _ := c.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, before := start.Add(-time.Nanosecond).Zone()
	_, at := c.Zone()
	back := time.Duration(before-at) * time.Second
	return back > 0 && c.Before(start.Add(back))
}

// gapTick returns the end of the first gap of skipped wall time after t and before
// until (zero: no limit) in which the expression matches a wall time, or the zero time.
func (k *ticker) gapTick(t, until time.Time) time.Time {
	utc := *k.spec
	utc.Location = time.UTC
	at := t.In(k.loc)
	for range 32 { // zone periods: two a year where clocks change
		_, end := at.ZoneBounds()
		if end.IsZero() || (!until.IsZero() && end.After(until)) {
			return time.Time{}
		}
		_, before := end.Add(-time.Nanosecond).Zone()
		_, after := end.Zone()
		if after > before {
			// Wall times from end in the old offset to end in the new one never occur.
			from := end.Add(time.Duration(before) * time.Second).UTC()
			to := end.Add(time.Duration(after) * time.Second).UTC()
			if m := utc.Next(from.Add(-time.Second)); !m.IsZero() && m.Before(to) && end.After(t) {
				return end
			}
		}
		at = end
	}
	return time.Time{}
}

// SchedulePlan is what one fire of a schedule does, computed from the schedule as it
// was read: the ticks to fire and the mark after them. FirePlan applies it only if the
// schedule has not moved since (revision, mark, pause).
type SchedulePlan struct {
	Name     string
	Revision int64
	// PrevMark is the mark the plan was computed from; Mark the mark after it.
	PrevMark, Mark time.Time
	// Ticks fire, oldest first, each as job ScheduleJobID(Name, tick).
	Ticks []time.Time
	// Skipped missed ticks (of the last year) the misfire policy does not fire; the
	// latest of them is LastSkipped.
	Skipped     int
	LastSkipped time.Time
	// NextDue is the first tick after now; zero when there is none.
	NextDue time.Time
	job     Envelope
}

// plan applies the misfire policy to the ticks in (mark, now].
func (k *ticker) plan(st *ScheduleState, now time.Time) *SchedulePlan {
	p := &SchedulePlan{Name: st.Name, Revision: st.Revision, PrevMark: st.Mark, Mark: st.Mark, job: st.Job}
	m := st.Misfire
	onTime := now.Add(-m.Grace) // a tick at or after this is on time
	window := now.Add(-m.Window)
	skip := func(t time.Time) {
		p.Skipped++
		p.LastSkipped = t
	}
	var missed []time.Time // fire_once: the latest missed tick; catch_up: those of the window
	from := st.Mark
	if oldest := now.Add(-maxScheduleLookback); from.Before(oldest) {
		from = oldest
	}
	for t := k.next(from); !t.IsZero() && !t.After(now); t = k.next(t) {
		p.Mark = t
		switch {
		case !t.Before(onTime):
			p.Ticks = append(p.Ticks, t)
		case m.Policy == MisfireFireOnce:
			if len(missed) > 0 {
				skip(missed[0])
			}
			missed = append(missed[:0], t)
		case m.Policy == MisfireCatchUp && !t.Before(window):
			if len(missed) == 2*m.Max { // only the latest Max can fire
				for _, old := range missed[:m.Max] {
					skip(old)
				}
				missed = append(missed[:0], missed[m.Max:]...)
			}
			missed = append(missed, t)
		default:
			skip(t)
		}
	}
	switch {
	case m.Policy == MisfireFireOnce && len(p.Ticks) > 0 && len(missed) > 0:
		skip(missed[0]) // the tick on time is the one fire
		missed = nil
	case m.Policy == MisfireCatchUp && len(missed) > m.Max:
		for _, old := range missed[:len(missed)-m.Max] {
			skip(old)
		}
		missed = missed[len(missed)-m.Max:]
	}
	p.Ticks = append(missed, p.Ticks...)
	p.NextDue = k.next(now)
	return p
}
