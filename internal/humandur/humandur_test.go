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
