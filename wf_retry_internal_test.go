package headgate

import (
	"fmt"
	"testing"
	"time"
)

// TestRetryCutKeepsOutsideEvents: the cut is the failed step's first attempt; past it,
// signals, children's ends and the firing of a timer armed before the cut stay, and the
// firing of the removed attempts' retry timers goes.
func TestRetryCutKeepsOutsideEvents(t *testing.T) {
	due := time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC)
	events := []Event{
		{Seq: 1, Kind: EventWorkflowStarted},
		{Seq: 2, Kind: EventTimerStarted, Name: "a/nap#1", TimerID: "sleep/a/nap#1", FireAt: due},
		{Seq: 3, Kind: EventStepCompleted, Name: "ok#1", Attempt: 1},
		{Seq: 4, Kind: EventStepFailed, Name: "b/pay#1", Attempt: 1, FireAt: due},
		{Seq: 5, Kind: EventSignalReceived, Name: "go"},
		{Seq: 6, Kind: EventTimerFired, TimerID: "retry/b/pay#1/1"},
		{Seq: 7, Kind: EventTimerFired, TimerID: "sleep/a/nap#1"},
		{Seq: 8, Kind: EventChildCompleted, ChildWorkflowID: "w/kid#1"},
		{Seq: 9, Kind: EventStepFailed, Name: "b/pay#1", Attempt: 2},
		{Seq: 10, Kind: EventWorkflowFailed},
		{Seq: 11, Kind: EventSignalReceived, Name: "late"},
	}
	cut, keep := retryCut(events)
	if cut != 4 || fmt.Sprint(keep) != "[5 7 8 11]" {
		t.Errorf("retryCut = %d, %v; want 4, [5 7 8 11]", cut, keep)
	}
	// No step failed for good: the cut is the workflow_failed event.
	cut, keep = retryCut([]Event{{Seq: 1, Kind: EventWorkflowStarted}, {Seq: 2, Kind: EventWorkflowFailed},
		{Seq: 3, Kind: EventSignalReceived, Name: "go"}})
	if cut != 2 || fmt.Sprint(keep) != "[3]" {
		t.Errorf("retryCut without a failed step = %d, %v; want 2, [3]", cut, keep)
	}
}

// TestRetryCutSkipsHandledFailures: a step that failed for good and that the code went
// on from (a step of its scope completed after it) is not where a retry cuts, or the
// steps that completed since would run again; a failure in another scope (a Parallel
// branch) does not count as gone on from, and when the code went on from every failure
// (compensation, then an error) the cut is the last one.
func TestRetryCutSkipsHandledFailures(t *testing.T) {
	for _, c := range []struct {
		name   string
		events []Event
		cut    int64
	}{
		{"a handled failure, then the one that failed the run", []Event{
			{Seq: 1, Kind: EventWorkflowStarted},
			{Seq: 2, Kind: EventStepFailed, Name: "notify#1", Attempt: 1},
			{Seq: 3, Kind: EventStepCompleted, Name: "charge#1", Attempt: 1},
			{Seq: 4, Kind: EventStepFailed, Name: "ship#1", Attempt: 1, FireAt: time.UnixMilli(1)},
			{Seq: 5, Kind: EventTimerFired, TimerID: "retry/ship#1/1"},
			{Seq: 6, Kind: EventStepFailed, Name: "ship#1", Attempt: 2},
			{Seq: 7, Kind: EventWorkflowFailed},
		}, 4},
		{"a branch's failure before another branch's step", []Event{
			{Seq: 1, Kind: EventWorkflowStarted},
			{Seq: 2, Kind: EventStepFailed, Name: "fan#1[0]/call#1", Attempt: 1},
			{Seq: 3, Kind: EventStepCompleted, Name: "fan#1[1]/call#1", Attempt: 1},
			{Seq: 4, Kind: EventWorkflowFailed},
		}, 2},
		{"compensated, then failed", []Event{
			{Seq: 1, Kind: EventWorkflowStarted},
			{Seq: 2, Kind: EventStepFailed, Name: "notify#1", Attempt: 1},
			{Seq: 3, Kind: EventStepCompleted, Name: "charge#1", Attempt: 1},
			{Seq: 4, Kind: EventStepFailed, Name: "ship#1", Attempt: 1},
			{Seq: 5, Kind: EventStepCompleted, Name: "refund#1", Attempt: 1},
			{Seq: 6, Kind: EventWorkflowFailed},
		}, 4},
	} {
		if cut, _ := retryCut(c.events); cut != c.cut {
			t.Errorf("%s: retryCut = %d, want %d", c.name, cut, c.cut)
		}
	}
}
