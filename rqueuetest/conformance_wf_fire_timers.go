package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfFireTimersCases cover FireTimers (lua/wf_fire_timers.lua): due durable timers fire on
// the store clock and wake their workflows.
var wfFireTimersCases = []conformanceCase{
	{"WfFireTimers/OnTheStoreClock", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1, End: true,
			Events:    []headgate.Event{{Seq: 2, Kind: headgate.EventTimerStarted, Name: "s#1", TimerID: "sleep/s#1"}},
			ArmTimers: []headgate.TimerArm{{TimerID: "sleep/s#1", FireAt: epoch.Add(30 * 24 * time.Hour), ArmedSeq: 2}}})
		advance(t, ctx, s, 30*24*time.Hour-time.Millisecond)
		n, next, err := s.FireTimers(ctx, 10)
		if err != nil || n != 0 || !next.Equal(epoch.Add(30*24*time.Hour)) {
			t.Fatalf("fire 1ms early: %d fired, next %s, %v", n, next, err)
		}
		advance(t, ctx, s, time.Millisecond)
		if n, next, err = s.FireTimers(ctx, 10); err != nil || n != 1 || !next.IsZero() {
			t.Fatalf("fire when due: %d fired, next %s, %v", n, next, err)
		}
		h := mustHistory(t, ctx, s, "w")
		if len(h) != 3 || h[2].Kind != headgate.EventTimerFired || h[2].TimerID != "sleep/s#1" {
			t.Fatalf("history %+v, want timer_fired", h)
		}
		if next := admitOne(t, ctx, s, "wf"); string(next.Envelope.Payload) != "w" {
			t.Errorf("admitted %q, want the woken workflow's task", next.Envelope.Payload)
		}
	}},
}
