package rqueuetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// enqueueCases cover the Enqueue transition of the job contract.
var enqueueCases = []conformanceCase{
	{"Enqueue/Defaults", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		res := mustEnqueue(t, ctx, s,
			headgate.Envelope{ID: "now", Kind: "k", Tags: []string{"b", "a", "b"}},
			headgate.Envelope{ID: "later", Kind: "k", ScheduledAt: epoch.Add(time.Minute)},
			headgate.Envelope{ID: "staged", Kind: "k", Pending: true})
		want := []headgate.State{headgate.StateAvailable, headgate.StateScheduled, headgate.StatePending}
		for i, r := range res {
			if r.State != want[i] || r.Replayed {
				t.Errorf("enqueue %s: state %s replayed %v, want %s, not replayed", r.ID, r.State, r.Replayed, want[i])
			}
		}
		if !res[0].ScheduledAt.Equal(epoch) {
			t.Errorf("scheduled_at defaults to the store time: got %v, want %v", res[0].ScheduledAt, epoch)
		}
		delayed := mustEnqueue(t, ctx, s, headgate.Envelope{ID: "delayed", Kind: "k", ScheduledIn: time.Minute})
		if delayed[0].State != headgate.StateScheduled || !delayed[0].ScheduledAt.Equal(epoch.Add(time.Minute)) {
			t.Errorf("ScheduledIn counts from the store time: got %s at %v, want scheduled at %v",
				delayed[0].State, delayed[0].ScheduledAt, epoch.Add(time.Minute))
		}
		j := getJob(t, ctx, s, "now")
		if j.Queue != "default" || j.MaxAttempts != 25 || j.SchemaVersion != 1 || j.Weight != 1 ||
			!slices.Equal(j.Tags, []string{"a", "b"}) || j.Fence != 0 || j.Attempt != 0 {
			t.Errorf("defaults: got queue %q max_attempts %d schema %d weight %d tags %q fence %d attempt %d",
				j.Queue, j.MaxAttempts, j.SchemaVersion, j.Weight, j.Tags, j.Fence, j.Attempt)
		}
	}},
	// Plain jobs travel in fewer arguments than jobs with a partition, fingerprint, sticky
	// worker, rate class, unique key, tags or numbers off their defaults (lua/enqueue.lua):
	// in one batch, each job gets its own, whichever jobs of it have some.
	{"Enqueue/BatchOfPlainAndDetailedJobs", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		jobs := []headgate.Envelope{
			{ID: "plain", Kind: "k", Payload: []byte("p1")},
			{ID: "routed", Kind: "k", Queue: "q", PartitionKey: "tenant", Fingerprint: "fp", StickyWorker: "w1",
				RateClass: "rc", UniqueKey: "u", Tags: []string{"t"}, Priority: 7, MaxAttempts: 3, Payload: []byte("p2")},
			{ID: "plain2", Kind: "k2", Queue: "q", Payload: []byte("p3")},
			{ID: "later", Kind: "k", ScheduledAt: epoch.Add(time.Minute), Weight: 2},
		}
		res := mustEnqueue(t, ctx, s, jobs...)
		want := []headgate.State{headgate.StateAvailable, headgate.StateAvailable, headgate.StateAvailable, headgate.StateScheduled}
		for i, r := range res {
			if r.ID != jobs[i].ID || r.State != want[i] {
				t.Errorf("enqueue %s: %s %s, want %s", jobs[i].ID, r.ID, r.State, want[i])
			}
		}
		for _, e := range jobs {
			j := getJob(t, ctx, s, e.ID)
			queue := e.Queue
			if queue == "" {
				queue = headgate.QueueDefault
			}
			maxa, weight := e.MaxAttempts, e.Weight
			if maxa == 0 {
				maxa = headgate.MaxAttemptsDefault
			}
			if weight == 0 {
				weight = headgate.WeightDefault
			}
			if j.Kind != e.Kind || j.Queue != queue || string(j.Payload) != string(e.Payload) ||
				j.PartitionKey != e.PartitionKey || j.Fingerprint != e.Fingerprint || j.StickyWorker != e.StickyWorker ||
				j.RateClass != e.RateClass || j.UniqueKey != e.UniqueKey || !slices.Equal(j.Tags, e.Tags) ||
				j.Priority != e.Priority || j.MaxAttempts != maxa || j.Weight != weight {
				t.Errorf("%s stored as %+v, enqueued as %+v", e.ID, j.Envelope, e)
			}
		}
		if j := getJob(t, ctx, s, "later"); !j.ScheduledAt.Equal(epoch.Add(time.Minute)) {
			t.Errorf("later scheduled at %v, want %v", j.ScheduledAt, epoch.Add(time.Minute))
		}
	}},
	{"Enqueue/RefusedBatchWithReplacingDuplicateWritesNothing", func(t *testing.T, s *headgate.Store) {
		// A duplicate with debounce and every replace bit, in a batch: the batch is
		// refused, so the holder keeps its payload, time, priority and attempt limit.
		ctx := freeze(t, s)
		holder := headgate.Envelope{ID: "holder", Kind: "k", UniqueKey: "u", Payload: []byte(`{"v":1}`),
			ScheduledAt: epoch.Add(time.Hour), Priority: 1, MaxAttempts: 3}
		mustEnqueue(t, ctx, s, holder)
		dup := headgate.Envelope{ID: "dup", Kind: "k", UniqueKey: "u", Payload: []byte(`{"v":2}`),
			ScheduledAt: epoch.Add(2 * time.Hour), Priority: 7, MaxAttempts: 9, Tags: []string{"new"},
			UniqueDebounce: time.Minute,
			UniqueReplace:  headgate.ReplacePayload | headgate.ReplaceScheduledAt | headgate.ReplacePriority | headgate.ReplaceMaxAttempts}
		for _, batch := range [][]headgate.Envelope{
			{{ID: "fresh", Kind: "k"}, dup},
			{dup, {ID: "fresh", Kind: "k"}},
			{{ID: "holder", Kind: "k", Payload: []byte(`{"v":1}`)}, dup}, // a replay beside it
		} {
			err := unchanged(t, ctx, s, "batch refused by a replacing duplicate", func() error {
				_, err := s.Enqueue(ctx, batch...)
				return err
			})
			if d := wantErr[*headgate.DuplicateError](t, err); d != nil && (d.ExistingID != "holder" || d.Replaced ||
				d.State != headgate.StateScheduled || !d.ScheduledAt.Equal(epoch.Add(time.Hour))) {
				t.Errorf("refused batch: %+v, want the untouched holder, not replaced", *d)
			}
		}
	}},
	{"Enqueue/ReplaySameContentWritesNothing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.Fingerprint = "fp"
		mustEnqueue(t, ctx, s, e)
		c := admitOne(t, ctx, s)
		e.Payload = []byte("other payload")
		writesNothing(t, ctx, s, "a replay", func() {
			res := mustEnqueue(t, ctx, s, e)
			if !res[0].Replayed || res[0].State != headgate.StateRunning {
				t.Errorf("replay: got %+v, want replayed, running", res[0])
			}
		})
		mustAck(t, ctx, s, c, headgate.OutcomeSuccess, nil)
	}},
	{"Enqueue/IDConflictWritesNothing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		for _, change := range []func(*headgate.Envelope){
			func(e *headgate.Envelope) { e.Kind = "other" },
			func(e *headgate.Envelope) { e.Fingerprint = "other" },
			func(e *headgate.Envelope) { e.Queue = "other" },
		} {
			e := job("a")
			change(&e)
			err := unchanged(t, ctx, s, "id conflict", func() error {
				_, err := s.Enqueue(ctx, job("fresh"), e)
				return err
			})
			if c := wantErr[*headgate.IDConflictError](t, err); c != nil && c.JobID != "a" {
				t.Errorf("IDConflict names %q, want a", c.JobID)
			}
		}
	}},
}

// enqueueValidationCases check that each kind of bad envelope gets *headgate.InvalidError
// and leaves the store unchanged, and that a time before 1970 is no such thing. Go decides
// them before the script runs: ExerciseValidation runs them, on one backend.
var enqueueValidationCases = []conformanceCase{
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
}
