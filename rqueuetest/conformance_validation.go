package rqueuetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// validationCases check that each kind of bad input gets *headgate.InvalidError and
// leaves the store unchanged.
var validationCases = []conformanceCase{
	{"Invalid/Enqueue", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("existing"))
		cases := map[string]func(e *headgate.Envelope){
			"empty id":              func(e *headgate.Envelope) { e.ID = "" },
			"empty kind":            func(e *headgate.Envelope) { e.Kind = "" },
			"oversize payload":      func(e *headgate.Envelope) { e.Payload = make([]byte, headgate.MaxPayloadBytes+1) },
			"id with brace":         func(e *headgate.Envelope) { e.ID = "a{b" },
			"queue with brace":      func(e *headgate.Envelope) { e.Queue = "q}" },
			"queue with colon":      func(e *headgate.Envelope) { e.Queue = "a:b" },
			"queue with control":    func(e *headgate.Envelope) { e.Queue = "q\n" },
			"partition with brace":  func(e *headgate.Envelope) { e.PartitionKey = "{t}" },
			"partition with ctrl":   func(e *headgate.Envelope) { e.PartitionKey = "t\x00" },
			"fingerprint with ctrl": func(e *headgate.Envelope) { e.Fingerprint = "f\x7f" },
			"sticky with colon":     func(e *headgate.Envelope) { e.StickyWorker = "w:1" },
			"kind with control":     func(e *headgate.Envelope) { e.Kind = "k\t" },
			"tag with control":      func(e *headgate.Envelope) { e.Tags = []string{"ok", "bad\n"} },
			"empty tag":             func(e *headgate.Envelope) { e.Tags = []string{""} },
			"negative weight":       func(e *headgate.Envelope) { e.Weight = -1 },
			"huge weight":           func(e *headgate.Envelope) { e.Weight = headgate.MaxWeight + 1 },
			"negative max attempts": func(e *headgate.Envelope) { e.MaxAttempts = -1 },
			"negative schema":       func(e *headgate.Envelope) { e.SchemaVersion = -1 },
			"schema over limit":     func(e *headgate.Envelope) { e.SchemaVersion = headgate.MaxSchemaVersion + 1 },
			"negative retention":    func(e *headgate.Envelope) { e.Retention = -time.Second },
			"negative window":       func(e *headgate.Envelope) { e.UniqueKey, e.UniqueWindow = "u", -time.Second },
			"negative debounce":     func(e *headgate.Envelope) { e.UniqueKey, e.UniqueDebounce = "u", -time.Second },
			"unknown replace bits":  func(e *headgate.Envelope) { e.UniqueKey, e.UniqueReplace = "u", 1<<6 },
			"unique opts no key":    func(e *headgate.Envelope) { e.UniqueWindow = time.Second },
			"past year 287396":      func(e *headgate.Envelope) { e.ScheduledAt = time.UnixMilli(1 << 53) },
			"negative scheduled in": func(e *headgate.Envelope) { e.ScheduledIn = -time.Second },
			"scheduled at and in":   func(e *headgate.Envelope) { e.ScheduledAt, e.ScheduledIn = time.UnixMilli(5), time.Second },
			"long queue":            func(e *headgate.Envelope) { e.Queue = strings.Repeat("q", headgate.MaxNameBytes+1) },
		}
		for name, change := range cases {
			e := job("new")
			change(&e)
			err := unchanged(t, ctx, s, "enqueue "+name, func() error {
				_, err := s.Enqueue(ctx, job("first-of-batch"), e)
				return err
			})
			if iv := wantErr[*headgate.InvalidError](t, err); iv != nil && !strings.HasPrefix(iv.Field, "jobs[1].") {
				t.Errorf("enqueue %s: error names field %q, want jobs[1].*", name, iv.Field)
			}
		}
		dupID := func() error { _, err := s.Enqueue(ctx, job("x"), job("x")); return err }
		wantErr[*headgate.InvalidError](t, unchanged(t, ctx, s, "same id twice in a batch", dupID))
		u1, u2 := job("u1"), job("u2")
		u1.UniqueKey, u2.UniqueKey = "same", "same"
		dupKey := func() error { _, err := s.Enqueue(ctx, u1, u2); return err }
		wantErr[*headgate.InvalidError](t, unchanged(t, ctx, s, "same unique key twice in a batch", dupKey))
		big := make([]headgate.Envelope, headgate.MaxBatch+1)
		for i := range big {
			big[i] = job(fmt.Sprint("big-", i))
		}
		tooMany := func() error { _, err := s.Enqueue(ctx, big...); return err }
		wantErr[*headgate.InvalidError](t, unchanged(t, ctx, s, "oversize batch", tooMany))
	}},
	{"Valid/ScheduledBefore1970MeansNow", func(t *testing.T, s *headgate.Store) {
		// A past time means now, whether it is after 1970 or before: the docs say so and
		// an earlier store refused times before 1970 as invalid.
		ctx := freeze(t, s)
		times := map[string]time.Time{
			"1969":              time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC),
			"1970":              time.UnixMilli(0),
			"half a ms in 1970": time.Unix(0, 500_000),
			"year 1":            time.Time{}.Add(time.Nanosecond),
		}
		for name, at := range times {
			e := job("old-" + strings.ReplaceAll(name, " ", "-"))
			e.ScheduledAt = at
			res, err := s.Enqueue(ctx, e)
			if err != nil {
				t.Errorf("enqueue scheduled at %s: %v", name, err)
				continue
			}
			if res[0].State != headgate.StateAvailable || !res[0].ScheduledAt.Equal(epoch) {
				t.Errorf("enqueue scheduled at %s: %s at %v, want available at %v", name, res[0].State, res[0].ScheduledAt, epoch)
			}
			if j := getJob(t, ctx, s, e.ID); j.State != headgate.StateAvailable || !j.ScheduledAt.Equal(epoch) {
				t.Errorf("job scheduled at %s: %s at %v, want available at %v", name, j.State, j.ScheduledAt, epoch)
			}
		}
		if got := len(mustAdmit(t, ctx, s, admitReq("w", 10))); got != len(times) {
			t.Errorf("admitted %d jobs scheduled before 1970, want %d", got, len(times))
		}
	}},
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
