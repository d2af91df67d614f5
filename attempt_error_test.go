package headgate

import "testing"

// An entry of the error history names its attempt by the 1-based number the worker logs:
// a failed attempt counted itself in Attempt, any other ending did not.
func TestAttemptErrorNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    AttemptError
		want string
	}{
		{AttemptError{Outcome: "retry", State: StateRetryable, Attempt: 1, Fence: 1}, "retry -> retryable (attempt 1, fence 1)"},
		{AttemptError{Outcome: "retry", State: StateArchived, Attempt: 3, Fence: 3}, "retry -> archived (attempt 3, fence 3)"},
		{AttemptError{Outcome: "lease_lost", State: StateRetryable, CrashAttempt: 1, Fence: 1}, "lease_lost -> retryable (attempt 1, crash 1, fence 1)"},
		{AttemptError{Outcome: "snooze", State: StateScheduled, Fence: 1}, "snooze -> scheduled (attempt 1, fence 1)"},
		{AttemptError{Outcome: "snooze", State: StateRetryable, Attempt: 1, Fence: 2}, "snooze -> retryable (attempt 1, fence 2)"},
		{AttemptError{Outcome: "hand_back", State: StateAvailable, Attempt: 2, Fence: 4}, "hand_back -> available (attempt 3, fence 4)"},
		{AttemptError{Outcome: "skip", State: StateArchived, Fence: 1}, "skip -> archived (attempt 1, fence 1)"},
		// The holder is named by its lease id, which is not the worker's id.
		{AttemptError{Outcome: "retry", State: StateRetryable, Attempt: 1, Fence: 2, LeaseID: "w1-7", Message: "boom"},
			"retry -> retryable (attempt 1, fence 2, lease w1-7): boom"},
	} {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("%+v: String() = %q, want %q", tc.e, got, tc.want)
		}
	}
}
