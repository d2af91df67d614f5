package rqueuetest

import (
	"slices"
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
		before := snapshot(t, ctx, s)
		e.Payload = []byte("other payload")
		res := mustEnqueue(t, ctx, s, e)
		if !res[0].Replayed || res[0].State != headgate.StateRunning {
			t.Errorf("replay: got %+v, want replayed, running", res[0])
		}
		if after := snapshot(t, ctx, s); after != before {
			t.Errorf("replay wrote:\nbefore:\n%s\nafter:\n%s", before, after)
		}
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
