package workflow

import "fmt"

// NonDeterminismError: the code asked for something other than what the history
// recorded at that point, or returned before it replayed every command the history
// recorded (Code is then "nothing more (it returned)"; a run with a cancel request may
// stop early), so replaying it would give a wrong result. The task fails (and
// is retried with backoff, so a deploy of the right code resumes the run); nothing of it
// is committed past the mismatch.
type NonDeterminismError struct {
	WorkflowID string
	// History is what the history has ("step charge#1"), at Seq.
	History string
	Seq     int64
	// Code is what the code asked for ("refund#1", with its kind when that differs:
	// "sleep wait#1").
	Code string
}

func (e *NonDeterminismError) Error() string {
	return fmt.Sprintf("workflow %q: history has %s at seq %d, the code asked for %s", e.WorkflowID, e.History, e.Seq, e.Code)
}

// StepError is a step's error after its last attempt, as the history recorded it.
type StepError struct {
	Step    string // name and occurrence, "charge#1"
	Attempt int
	Message string
}

func (e *StepError) Error() string {
	attempts := "attempts"
	if e.Attempt == 1 {
		attempts = "attempt"
	}
	return fmt.Sprintf("workflow: step %s failed after %d %s: %s", e.Step, e.Attempt, attempts, e.Message)
}

// ChildError is a child workflow's failure, as its parent's history recorded it.
type ChildError struct {
	WorkflowID string
	Message    string
}

func (e *ChildError) Error() string {
	return fmt.Sprintf("workflow: child %q failed: %s", e.WorkflowID, e.Message)
}

// FailedError is the outcome of a run that failed, cancelled or was terminated, as
// Result reports it.
type FailedError struct {
	WorkflowID string
	Status     string // failed, cancelled or terminated
	Message    string
}

func (e *FailedError) Error() string {
	if e.Message == "" { // a terminate or cancel that gave no reason
		return fmt.Sprintf("workflow %q %s", e.WorkflowID, e.Status)
	}
	return fmt.Sprintf("workflow %q %s: %s", e.WorkflowID, e.Status, e.Message)
}

// Is makes a cancelled run's FailedError match ErrCancelled.
func (e *FailedError) Is(target error) bool { return target == ErrCancelled && e.Status == "cancelled" }

// continueAsNew is returned by ContinueAsNew.
type continueAsNew struct{ input []byte }

func (e *continueAsNew) Error() string { return "workflow: continue as new" }
