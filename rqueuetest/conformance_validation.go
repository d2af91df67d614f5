package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// The refusals of bad input that Go decides before any script runs, for calls that span
// many transitions: ExerciseValidation runs them, on one backend. validationCases cover
// the holder's calls and the maintenance calls (admit, renew, ack, write_output,
// write_progress, checkpoint, claim_duty, set_rate_limit, reclaim, promote, evict, the
// queue pause and the store clock) in one case, on one admitted lease;
// operatorValidationCases cover the operator verbs (retry, edit, delete,
// release_quarantine's retry). Each must get *headgate.InvalidError and leave the store
// unchanged. A transition's refusals of its own sit in its conformance_<transition>.go
// (enqueueValidationCases, scheduleValidationCases).
var validationCases = []conformanceCase{
	{"Invalid/AdmitAckAndWrites", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		req := admitReq("w", 1)
		admits := map[string]func(r *headgate.AdmitRequest){
			"zero lease":        func(r *headgate.AdmitRequest) { r.Lease = 0 },
			"zero capacity":     func(r *headgate.AdmitRequest) { r.Capacity = 0 },
			"no queues":         func(r *headgate.AdmitRequest) { r.Queues = nil },
			"queue with brace":  func(r *headgate.AdmitRequest) { r.Queues = []string{"{q}"} },
			"worker with colon": func(r *headgate.AdmitRequest) { r.Worker = "a:b" },
			"empty lease id":    func(r *headgate.AdmitRequest) { r.LeaseID = "" },
			"negative quantum":  func(r *headgate.AdmitRequest) { r.Quantum = -1 },
		}
		for name, change := range admits {
			r := req
			change(&r)
			err := unchanged(t, ctx, s, "admit "+name, func() error { _, err := s.Admit(ctx, r); return err })
			wantErr[*headgate.InvalidError](t, err)
		}
		c := admitOne(t, ctx, s)
		l := c.LeaseRef()
		big := make([]byte, headgate.MaxPayloadBytes+1)
		calls := map[string]func() error{
			"renew zero lease": func() error { _, err := s.Renew(ctx, []headgate.LeaseRef{l}, 0); return err },
			"snooze without delay": func() error {
				_, err := s.Ack(ctx, l, headgate.OutcomeSnooze, nil)
				return err
			},
			"negative retry delay": func() error {
				_, err := s.Ack(ctx, l, headgate.OutcomeRetry, &headgate.AckOpts{Delay: -time.Second})
				return err
			},
			"unknown outcome": func() error { _, err := s.Ack(ctx, l, headgate.Outcome(99), nil); return err },
			"negative actual weight": func() error {
				w := -1
				_, err := s.Ack(ctx, l, headgate.OutcomeSuccess, &headgate.AckOpts{ActualWeight: &w})
				return err
			},
			"result schema 0": func() error {
				_, err := s.Ack(ctx, l, headgate.OutcomeSuccess, &headgate.AckOpts{Result: &headgate.Blob{Bytes: []byte("r")}})
				return err
			},
			"result schema over limit": func() error {
				_, err := s.Ack(ctx, l, headgate.OutcomeSuccess, &headgate.AckOpts{Result: &headgate.Blob{SchemaVersion: headgate.MaxSchemaVersion + 1}})
				return err
			},
			"result over 32 MiB": func() error {
				_, err := s.Ack(ctx, l, headgate.OutcomeSuccess, &headgate.AckOpts{Result: &headgate.Blob{SchemaVersion: 1, Bytes: big}})
				return err
			},
			"result on retry": func() error {
				_, err := s.Ack(ctx, l, headgate.OutcomeRetry, &headgate.AckOpts{Result: &headgate.Blob{SchemaVersion: 1}})
				return err
			},
			"output schema 0": func() error { _, err := s.WriteOutput(ctx, l, headgate.Blob{}); return err },
			"output schema over limit": func() error {
				_, err := s.WriteOutput(ctx, l, headgate.Blob{SchemaVersion: headgate.MaxSchemaVersion + 1})
				return err
			},
			"output over 32 MiB": func() error {
				_, err := s.WriteOutput(ctx, l, headgate.Blob{SchemaVersion: 1, Bytes: big})
				return err
			},
			"progress negative": func() error {
				_, err := s.WriteProgress(ctx, l, headgate.Progress{Current: -1})
				return err
			},
			"progress past total": func() error {
				_, err := s.WriteProgress(ctx, l, headgate.Progress{Current: 5, Total: 4})
				return err
			},
			"checkpoint step with control": func() error {
				return s.Checkpoint(ctx, l, headgate.Checkpoint{InProgress: "a\nb"})
			},
			"claim duty zero lease":  func() error { _, err := s.ClaimDuty(ctx, "d", "h", 0); return err },
			"negative enqueue limit": func() error { return s.SetEnqueueLimit(ctx, "default", -1) },
			"rate limit zero window": func() error {
				return s.SetRateLimit(ctx, "rc", headgate.RateLimit{Limit: 1, Window: 0, Burst: 1})
			},
			"rate limit zero burst": func() error {
				return s.SetRateLimit(ctx, "rc", headgate.RateLimit{Limit: 1, Window: time.Second, Burst: 0})
			},
			"rate limit negative limit": func() error {
				return s.SetRateLimit(ctx, "rc", headgate.RateLimit{Limit: -1, Window: time.Second, Burst: 1})
			},
			"reclaim zero limit":  func() error { _, err := s.ReclaimExpired(ctx, 0); return err },
			"promote zero limit":  func() error { _, _, err := s.PromoteDue(ctx, 0); return err },
			"evict zero limit":    func() error { _, err := s.EvictRetained(ctx, 0); return err },
			"pause bad queue":     func() error { return s.PauseQueue(ctx, "a:b") },
			"clock before 1970":   func() error { return s.FreezeClock(ctx, time.UnixMilli(-1)) },
			"clock step backward": func() error { return s.AdvanceClock(ctx, -time.Second) },
		}
		for name, call := range calls {
			wantErr[*headgate.InvalidError](t, unchanged(t, ctx, s, name, call))
		}
		mustAck(t, ctx, s, c, headgate.OutcomeSuccess, nil)
	}},
}

// operatorValidationCases check that the operator verbs refuse bad input with
// *headgate.InvalidError, writing nothing.
var operatorValidationCases = []conformanceCase{
	{"Invalid/OperatorVerbs", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		at := epoch.Add(time.Hour)
		calls := map[string]func() error{
			"retry empty id":      func() error { _, err := s.Retry(ctx, "", nil); return err },
			"retry id with brace": func() error { _, err := s.Retry(ctx, "a{", nil); return err },
			"retry edits time": func() error {
				_, err := s.Retry(ctx, "a", &headgate.RetryOptions{Edit: &headgate.JobEdit{ScheduledAt: &at}})
				return err
			},
			"edit nothing":         func() error { _, err := s.Edit(ctx, "a", headgate.JobEdit{}); return err },
			"edit empty id":        func() error { _, err := s.Edit(ctx, "", headgate.JobEdit{Priority: new(int32(1))}); return err },
			"edit zero max":        func() error { _, err := s.Edit(ctx, "a", headgate.JobEdit{MaxAttempts: new(0)}); return err },
			"edit huge max":        func() error { _, err := s.Edit(ctx, "a", headgate.JobEdit{MaxAttempts: new(1 << 60)}); return err },
			"edit empty tag":       func() error { _, err := s.Edit(ctx, "a", headgate.JobEdit{Tags: new([]string{""})}); return err },
			"edit partition brace": func() error { _, err := s.Edit(ctx, "a", headgate.JobEdit{PartitionKey: new("{t}")}); return err },
			"edit zero time":       func() error { _, err := s.Edit(ctx, "a", headgate.JobEdit{ScheduledAt: new(time.Time{})}); return err },
			"edit oversize payload": func() error {
				_, err := s.Edit(ctx, "a", headgate.JobEdit{Payload: new(make([]byte, headgate.MaxPayloadBytes+1))})
				return err
			},
			"delete empty id":     func() error { _, err := s.Delete(ctx, ""); return err },
			"release-retry empty": func() error { _, err := s.ReleaseQuarantineAndRetry(ctx, ""); return err },
		}
		for name, call := range calls {
			wantErr[*headgate.InvalidError](t, unchanged(t, ctx, s, name, call))
		}
	}},
}
