package humandur

import (
	"testing"
	"time"
)

func TestString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{400 * time.Microsecond, "0s"},
		{350*time.Millisecond + 400*time.Microsecond, "350ms"},
		{1500 * time.Millisecond, "1.5s"},
		{42 * time.Second, "42s"},
		{time.Minute, "1m"},
		{4*time.Minute + 5*time.Second + 999*time.Millisecond, "4m5s"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + 30*time.Second, "1h0m30s"},
		{48*time.Hour - time.Second, "47h59m59s"},
		{48 * time.Hour, "2d"},
		{7 * 24 * time.Hour, "7d"},
		{76*time.Hour + 59*time.Minute, "3d4h"},
		{27041*time.Hour + 28*time.Minute + 57*time.Second, "1126d17h"},
		{-90 * time.Second, "-1m30s"},
		{-27041 * time.Hour, "-1126d17h"},
		{time.Duration(-1 << 63), "-106751d23h"},
	} {
		if got := String(tc.d); got != tc.want {
			t.Errorf("String(%d) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// Parse takes back what String prints, and Go's notation.
func TestParse(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, 350 * time.Millisecond, 1500 * time.Millisecond, time.Minute, 4*time.Minute + 5*time.Second,
		time.Hour + 30*time.Second, 48*time.Hour - time.Second, 48 * time.Hour, 7 * 24 * time.Hour, 76 * time.Hour,
		27041 * time.Hour} {
		if got, err := Parse(String(d)); err != nil || got != d {
			t.Errorf("Parse(%q) = %s, %v; want %s", String(d), got, err, d)
		}
	}
	for s, want := range map[string]time.Duration{"168h": 168 * time.Hour, "1d": 24 * time.Hour, "0d": 0, "1d30m": 24*time.Hour + 30*time.Minute,
		"-90s": -90 * time.Second} {
		if got, err := Parse(s); err != nil || got != want {
			t.Errorf("Parse(%q) = %s, %v; want %s", s, got, err, want)
		}
	}
	for _, s := range []string{"", "d", "1.5d", "-1d", "1dx", "xd", "1d-1h", "106752d", "7days"} {
		if got, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %s, want an error", s, got)
		}
	}
}
