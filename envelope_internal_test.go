package headgate

import "testing"

// A job hash holds few of the fields jobFromHash reads (most jobs have no priority,
// retention, schema, rate class, unique key or crashes): an absent number reads as 0
// without the allocation of a parse error, and a corrupt one reads as 0 too.
func TestJobFromHashAbsentFields(t *testing.T) {
	h := map[string]string{"kind": "email", "queue": "default", "payload": "\x80", "state": "running",
		"attempt": "2", "fence": "3", "sched": "1000"}
	j := jobFromHash("j1", h)
	if j.Attempt != 2 || j.Fence != 3 || j.ScheduledAt.UnixMilli() != 1000 || j.Priority != 0 ||
		j.MaxAttempts != MaxAttemptsDefault || j.Weight != WeightDefault || j.Retention != 0 {
		t.Fatalf("decoded %+v", j)
	}
	if n := testing.AllocsPerRun(100, func() { jobFromHash("j1", h) }); n > 3 {
		t.Errorf("jobFromHash of a hash with its usual fields: %.0f allocations, want at most 3", n)
	}
	h["prio"], h["maxa"] = "x1", "99999999999999999999"
	if j := jobFromHash("j1", h); j.Priority != 0 || j.MaxAttempts != MaxAttemptsDefault {
		t.Errorf("corrupt priority and max attempts decoded as %d and %d, want 0 and the default", j.Priority, j.MaxAttempts)
	}
}
