package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	requireContains(t, b.mustRun(t, "policy"),
		"retry_base       1s     default",
		"ret_archived     7d     default",
		"snooze_limit     100    default",
		"fp_inflight      0      default",
	)
	requireContains(t, b.mustRun(t, "policy", "set", "retry_base", "2s", "snooze_limit", "5", "fp_inflight", "1"),
		"retry_base       2s     namespace",
		"crash_limit      3      namespace",
		"snooze_limit     5      namespace",
		"fp_inflight      1      namespace",
	)
	// The store a worker uses applies what the command set.
	p, err := b.store.Policy(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.RetryBase != 2*time.Second || p.SnoozeLimit != 5 || p.FingerprintInflight != 1 || len(p.Stored) != 9 {
		t.Errorf("policy after set = %+v", p)
	}
	var shown struct {
		Policy map[string]int64 `json:"policy"`
		Stored []string         `json:"stored"`
	}
	if err := json.Unmarshal([]byte(b.mustRun(t, "policy", "show", "-json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Policy["retry_base_ms"] != 2000 || shown.Policy["ret_cancelled_ms"] != 7*24*3600*1000 ||
		shown.Policy["snooze_limit"] != 5 || len(shown.Stored) != 9 {
		t.Errorf("policy -json = %+v", shown)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"policy", "set"}, exitUsage, "FIELD VALUE pairs"},
		{[]string{"policy", "set", "retry_base"}, exitUsage, "FIELD VALUE pairs"},
		{[]string{"policy", "set", "speed", "1"}, exitUsage, `unknown policy field "speed"`},
		// A value that does not parse is a usage error (exit 2) naming the field as typed,
		// as a flag value that does not parse is for cron, limit, rate and edit, and so is
		// one out of range, with the range.
		{[]string{"policy", "set", "retry_base", "soon"}, exitUsage, `headgate policy: retry_base: "soon" is not a duration`},
		{[]string{"policy", "set", "snooze_limit", "many"}, exitUsage, `headgate policy: snooze_limit: "many" is not a whole number`},
		{[]string{"policy", "set", "crash_limit", "0"}, exitUsage, "headgate policy: crash_limit: is 0, outside 1..2147483647"},
		{[]string{"policy", "set", "crash_limit", "-1"}, exitUsage, "headgate policy: crash_limit: is -1, outside 1..2147483647"},
		{[]string{"policy", "set", "ret_archived", "-1h"}, exitUsage, "headgate policy: ret_archived: is -1h0m0s, outside 0.."},
		{[]string{"policy", "set", "retry_cap", "1ms"}, exitUsage, "headgate policy: retry_cap: must be at least RetryBase"},
		{[]string{"policy", "frob"}, exitUsage, "want show, or set"},
	} {
		code, _, errOut := b.run(t, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, errOut)
		}
		requireContains(t, errOut, tc.want)
	}
	if p2, err := b.store.Policy(b.ctx); err != nil || p2.CrashLimit != 3 || p2.RetryBase != 2*time.Second {
		t.Errorf("refused sets changed the policy: %+v, %v", p2, err)
	}
}

// A duration as the table prints it ("7d", "3d4h") is taken back by set; a count field
// still wants a whole number.
func TestPolicySetTakesPrintedDurations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	requireContains(t, b.mustRun(t, "policy", "set", "ret_archived", "14d", "ret_cancelled", "3d4h", "retry_cap", "2h"),
		"ret_archived     14d    namespace",
		"ret_cancelled    3d4h   namespace",
		"retry_cap        2h     namespace",
	)
	p, err := b.store.Policy(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.RetentionArchived != 14*24*time.Hour || p.RetentionCancelled != 76*time.Hour || p.RetryCap != 2*time.Hour {
		t.Errorf("policy after set = %+v", p)
	}
	if code, _, errOut := b.run(t, "policy", "set", "crash_limit", "2d"); code != exitUsage || !strings.Contains(errOut, `crash_limit: "2d" is not a whole number`) {
		t.Errorf("policy set crash_limit 2d: exit %d, stderr %q", code, errOut)
	}
}
