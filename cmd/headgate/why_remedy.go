package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/headgate/headgate"
)

// remedy is the command an operator runs to lift a reason a job is not running, or ""
// where none is theirs to run: the reclaimer hands back expired leases by itself, and a
// partition's turn or a rate class refilling only takes time.
// Every name in it is shellArg-quoted, so the line can be pasted as it is.
//
// pausedWorkflow names the paused workflow whose task or step job id is, "" for any other
// job: such a job is staged by the pause, and what lifts it is resuming the workflow
// (releasing the job alone does not run the workflow on).
func remedy(id, pausedWorkflow string, state headgate.State, r headgate.Reason) string {
	id = shellArg(id)
	switch r.Reason {
	case headgate.WhyStaged:
		if pausedWorkflow != "" {
			return "headgate wf resume " + shellArg(pausedWorkflow) + "   (its workflow is paused)"
		}
		return "headgate release " + id
	case headgate.WhyScheduled, headgate.WhyRetrying:
		return "headgate edit " + id + " -at 0s   (run it now)"
	case headgate.WhyPaused:
		return "headgate resume " + shellArg(r.Queue)
	case headgate.WhyQuarantined:
		return fmt.Sprintf("headgate quarantine release %s   (add -retry to also retry %s)", shellArg(r.Fingerprint), shellArg(r.CrashedJob))
	case headgate.WhyRateLimited:
		if r.At.IsZero() { // a class at limit 0: time lifts nothing
			return fmt.Sprintf("headgate rate %s LIMIT WINDOW BURST   (a LIMIT above 0)", shellArg(r.Class))
		}
	case headgate.WhyTooHeavy:
		return fmt.Sprintf("headgate rate %s LIMIT WINDOW BURST   (a BURST of at least %d)", shellArg(r.Class), r.Weight)
	case headgate.WhyQueueFull:
		return fmt.Sprintf("headgate limit %s N|off   (now %d)", shellArg(r.Queue), r.Limit)
	case headgate.WhyNoLiveWorker, headgate.WhyNoWorkerForKind, headgate.WhyPinnedWorkerGone:
		return "headgate workers   (start a worker that serves it)"
	case headgate.WhyWorkersBusy:
		return "headgate workers   (the jobs in flight of each; more workers, or a higher Concurrency, run more at once)"
	case headgate.WhyCorrupt:
		return "headgate corrupt   (repair what its reason names in Redis, then headgate delete " + id + ")"
	case headgate.WhyFinished:
		switch state {
		case headgate.StateQuarantined:
			fp := "FINGERPRINT" // a store from before why named a quarantined job's fingerprint
			if r.Fingerprint != "" {
				fp = shellArg(r.Fingerprint)
			}
			return "headgate quarantine release " + fp + " -retry   (lifts its fingerprint too; headgate retry " + id + " alone does not)"
		case headgate.StateArchived, headgate.StateCancelled, headgate.StateUndecodable, headgate.StateCompleted:
			return "headgate retry " + id
		}
	}
	return ""
}

// remediesText lists the commands that lift the explanation's reasons, once each, or ""
// when none is an operator's to run (pausedWorkflow as remedy takes it).
func remediesText(e *headgate.Explanation, pausedWorkflow string) string {
	var out []string
	for _, r := range e.Reasons {
		if cmd := remedy(e.ID, pausedWorkflow, e.State, r); cmd != "" && !slices.Contains(out, cmd) {
			out = append(out, cmd)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "to act:\n  " + strings.Join(out, "\n  ") + "\n"
}

// shellArg is s as one word of a POSIX shell command line: as it is when it holds only
// characters no shell treats specially, else in single quotes, each quote inside it
// closed, escaped and reopened.
func shellArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@+,%", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stagedWorkflowOf returns the workflow that a staged job belongs to when the job is a
// workflow's task or step job (kind workflow:<type> or workflow-step:<type>, id
// wft:<workflow>:<n> or wfs:<workflow>:<n>), "" otherwise.
func stagedWorkflowOf(id string, state headgate.State, kind string) string {
	if state != headgate.StatePending || !strings.HasPrefix(kind, "workflow:") && !strings.HasPrefix(kind, "workflow-step:") {
		return ""
	}
	rest, ok := strings.CutPrefix(id, "wft:")
	if !ok {
		if rest, ok = strings.CutPrefix(id, "wfs:"); !ok {
			return ""
		}
	}
	if i := strings.LastIndexByte(rest, ':'); i > 0 {
		return rest[:i]
	}
	return ""
}
