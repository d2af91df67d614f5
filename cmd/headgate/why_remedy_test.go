package main

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// Each reason an operator can lift names its command; the others name none.
func TestRemedy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		state headgate.State
		r     headgate.Reason
		want  string
	}{
		{headgate.StatePending, headgate.Reason{Reason: headgate.WhyStaged}, "headgate release j"},
		{headgate.StateRetryable, headgate.Reason{Reason: headgate.WhyRetrying}, "headgate edit j -at 0s   (run it now)"},
		{headgate.StateAvailable, headgate.Reason{Reason: headgate.WhyPaused, Queue: "mail"}, "headgate resume mail"},
		{headgate.StateAvailable, headgate.Reason{Reason: headgate.WhyQuarantined, Fingerprint: "fp", CrashedJob: "c"},
			"headgate quarantine release fp   (add -retry to also retry c)"},
		{headgate.StateAvailable, headgate.Reason{Reason: headgate.WhyTooHeavy, Class: "api", Weight: 5},
			"headgate rate api LIMIT WINDOW BURST   (a BURST of at least 5)"},
		// A class at limit 0 never refills (no At): only a new limit lifts it.
		{headgate.StateAvailable, headgate.Reason{Reason: headgate.WhyRateLimited, Class: "api"},
			"headgate rate api LIMIT WINDOW BURST   (a LIMIT above 0)"},
		{headgate.StatePending, headgate.Reason{Reason: headgate.WhyQueueFull, Queue: "q", Limit: 10}, "headgate limit q N|off   (now 10)"},
		{headgate.StateArchived, headgate.Reason{Reason: headgate.WhyFinished}, "headgate retry j"},
		{headgate.StateQuarantined, headgate.Reason{Reason: headgate.WhyFinished},
			"headgate quarantine release FINGERPRINT -retry   (lifts its fingerprint too; headgate retry j alone does not)"},
		{headgate.StateCompleted, headgate.Reason{Reason: headgate.WhyFinished}, "headgate retry j"},
		{headgate.StateQuarantined, headgate.Reason{Reason: headgate.WhyFinished, Fingerprint: "fp 1"},
			"headgate quarantine release 'fp 1' -retry   (lifts its fingerprint too; headgate retry j alone does not)"},
		// Time or the fleet lifts these.
		{headgate.StateRunning, headgate.Reason{Reason: headgate.WhyRunning}, ""},
		{headgate.StateRunning, headgate.Reason{Reason: headgate.WhyLeaseExpired}, ""},
		{headgate.StateAvailable, headgate.Reason{Reason: headgate.WhyPartitionTurn}, ""},
		{headgate.StateAvailable, headgate.Reason{Reason: headgate.WhyRateLimited, Class: "api", At: time.Unix(1, 0)}, ""},
		{headgate.StateAvailable, headgate.Reason{Reason: headgate.WhyFingerprintCap}, ""},
	}
	for _, c := range cases {
		if got := remedy("j", "", c.state, c.r); got != c.want {
			t.Errorf("remedy(%s, %s) = %q, want %q", c.state, c.r.Reason, got, c.want)
		}
	}
	// Names a shell would split or expand are quoted, so the line pastes as it is.
	if got, want := remedy("a/b?c#d %41 e", "", headgate.StatePending, headgate.Reason{Reason: headgate.WhyStaged}),
		"headgate release 'a/b?c#d %41 e'"; got != want {
		t.Errorf("remedy of an id with spaces = %q, want %q", got, want)
	}
	if got, want := remedy("j", "", headgate.StateAvailable, headgate.Reason{Reason: headgate.WhyPaused, Queue: "it's $HOME"}),
		`headgate resume 'it'\''s $HOME'`; got != want {
		t.Errorf("remedy of a queue with a quote = %q, want %q", got, want)
	}
	e := &headgate.Explanation{ID: "j", State: headgate.StateAvailable, Reasons: []headgate.Reason{
		{Reason: headgate.WhyNoLiveWorker}, {Reason: headgate.WhyNoWorkerForKind}, {Reason: headgate.WhyPartitionTurn}}}
	if got, want := remediesText(e, ""), "to act:\n  headgate workers   (start a worker that serves it)\n"; got != want {
		t.Errorf("remediesText = %q, want %q (each command once)", got, want)
	}
	if got := remediesText(&headgate.Explanation{Reasons: []headgate.Reason{{Reason: headgate.WhyRunning}}}, ""); got != "" {
		t.Errorf("remediesText of a running job = %q, want none", got)
	}
}
