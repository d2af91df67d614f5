package headgate

import "testing"

// A job hash holds few of the fields jobFromHash reads (most jobs have no priority,
// retention, schema, rate class, unique key or crashes): an absent number reads as 0
// without the allocation of a parse error, and a corrupt one reads as 0 too.
func TestJobFromHashAbsentFields(t *testing.T) {
	h := map[string]string{"kind": "email", "queue": "default", "payload": "\x80", "state": "running",
		"attempt": "2", "fence": "3", "sched": "1000"}
	j := jobFromHash("j1", h, nil)
	if j.Attempt != 2 || j.Fence != 3 || j.ScheduledAt.UnixMilli() != 1000 || j.Priority != 0 ||
		j.MaxAttempts != MaxAttemptsDefault || j.Weight != WeightDefault || j.Retention != 0 {
		t.Fatalf("decoded %+v", j)
	}
	if n := testing.AllocsPerRun(100, func() { jobFromHash("j1", h, nil) }); n > 3 {
		t.Errorf("jobFromHash of a hash with its usual fields: %.0f allocations, want at most 3", n)
	}
	h["prio"], h["maxa"] = "x1", "99999999999999999999"
	if j := jobFromHash("j1", h, nil); j.Priority != 0 || j.MaxAttempts != MaxAttemptsDefault {
		t.Errorf("corrupt priority and max attempts decoded as %d and %d, want 0 and the default", j.Priority, j.MaxAttempts)
	}
}

// The jobs of one admission carve their tags from one arena: a job's tags cost no
// allocation of their own once the arena has room, a job without tags none at all, and
// an append to one job's tags leaves the next job's as they were.
func TestSplitTagsArena(t *testing.T) {
	arena := make([]string, 0, 4)
	a := splitTags("~tp=00-x", &arena)
	b := splitTags("red\nblue", &arena)
	if len(a) != 1 || a[0] != "~tp=00-x" || len(b) != 2 || b[0] != "red" || b[1] != "blue" {
		t.Fatalf("split %q and %q", a, b)
	}
	a = append(a, "extra")
	if b[0] != "red" {
		t.Errorf("an append to the first job's tags overwrote the second's: %q", b)
	}
	if c := splitTags("x\ny\nz", &arena); len(c) != 3 || c[2] != "z" {
		t.Errorf("past the arena's room: %q", c)
	}
	h := map[string]string{"kind": "email", "queue": "default", "payload": "\x80", "state": "running",
		"attempt": "1", "fence": "1", "sched": "1000", "tags": "~tp=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	bare := map[string]string{"kind": "email", "queue": "default", "payload": "\x80", "state": "running",
		"attempt": "1", "fence": "1", "sched": "1000"}
	const runs = 100
	big := make([]string, 0, runs+1)
	withTag := testing.AllocsPerRun(runs, func() { jobFromHash("j1", h, &big) })
	without := testing.AllocsPerRun(runs, func() { jobFromHash("j1", bare, &big) })
	if withTag != without {
		t.Errorf("a job with a tag decodes with %.0f allocations, one without with %.0f: the tag should cost none", withTag, without)
	}
	if j := jobFromHash("j1", h, &big); len(j.Tags) != 1 || j.Tags[0] != h["tags"] {
		t.Errorf("tags decoded as %q", j.Tags)
	}
}

// validateName refuses what it refused when it decoded runes: braces, control characters
// and, where not allowed, a colon, whatever the UTF-8 around them, valid or not.
func TestValidateNameBytes(t *testing.T) {
	byRunes := func(v string, colonOK bool) bool { // the rune-decoding rule
		for _, r := range v {
			if r == '{' || r == '}' || r < 0x20 || r == 0x7f || (r == ':' && !colonOK) {
				return false
			}
		}
		return true
	}
	for _, v := range []string{"", "email", "_tp=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"a:b", "a{b", "b}", "tab\there", "del\x7f", "nul\x00", "é:ü", "日本語", "\xc0\x80", "\xff\xfe",
		"\xe2\x80", "ok\xe2\x80{", "\u2028", "\u00a0", "\xed\xa0\x80"} {
		for _, colonOK := range []bool{false, true} {
			if got, want := validateName("F", v, colonOK) == nil, byRunes(v, colonOK); got != want {
				t.Errorf("validateName(%q, colonOK %v) accepts: %v, want %v", v, colonOK, got, want)
			}
		}
	}
}
