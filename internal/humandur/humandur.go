// Package humandur prints durations the way headgate's command line, dashboard and
// reasons show them to people: one compact rule everywhere.
package humandur

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// day is 24 hours: durations are store time, without calendar days.
const day = 24 * time.Hour

// String renders d for a person. Under a minute it is Go's notation rounded to the
// millisecond (0s, 350ms, 1.5s, 42s); from a minute on the sub-second part is dropped
// and so are zero units at the end (4m5s, 1h, 1h30m, 1h0m30s, 47h59m59s); from 48
// hours on it is days and hours, the rest dropped (2d, 3d4h, 1126d17h). A negative
// duration reads the same with a minus sign.
func String(d time.Duration) string {
	if d < 0 {
		if d == time.Duration(-1<<63) {
			d++ // -d would overflow; a nanosecond is far below what is shown
		}
		return "-" + String(-d)
	}
	unit := func(n time.Duration, u string) string { return strconv.FormatInt(int64(n), 10) + u }
	switch {
	case d < time.Minute:
		return d.Round(time.Millisecond).String()
	case d < 48*time.Hour:
		h, m, s := d/time.Hour, d%time.Hour/time.Minute, d%time.Minute/time.Second
		out := ""
		if h > 0 {
			out = unit(h, "h")
		}
		if m > 0 || (h > 0 && s > 0) {
			out += unit(m, "m")
		}
		if s > 0 {
			out += unit(s, "s")
		}
		return out
	}
	out := unit(d/day, "d")
	if h := d % day / time.Hour; h > 0 {
		out += unit(h, "h")
	}
	return out
}

// Parse reads a duration as String prints it or as time.ParseDuration takes it: Go's
// notation, led by a count of days from 48 hours on ("7d", "3d4h", "1126d17h"), so a
// duration copied from what the command printed is taken back as it was.
func Parse(s string) (time.Duration, error) {
	days, rest, hasDays := int64(0), s, false
	if i := strings.IndexByte(s, 'd'); i > 0 {
		hasDays = true
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n < 0 || n > int64(math.MaxInt64/day) {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		days, rest = n, s[i+1:]
	}
	d := time.Duration(0)
	if rest != "" || !hasDays {
		var err error
		if d, err = time.ParseDuration(rest); err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		if days > 0 && (d < 0 || d > time.Duration(math.MaxInt64)-time.Duration(days)*day) {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
	}
	return time.Duration(days)*day + d, nil
}
