package headgate

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// TestWhyWorkersBusy: a job that waits because every live worker that could run it is at
// its concurrency says so (workers_busy, with the jobs in flight and the slots summed
// over those workers), instead of only its partition's turn with nothing ahead. A worker
// with a free slot, one of another kind, or one that never said its concurrency does not
// make it busy; a pinned job names its worker.
func TestWhyWorkersBusy(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, must := frozenStore(t, rdb)
		_, err := s.Enqueue(ctx, Envelope{ID: "a", Kind: "k", Queue: "q"}, Envelope{ID: "p", Kind: "k", Queue: "q", StickyWorker: "w1"})
		must(err)
		beat := func(id, kind string, inFlight, concurrency int) {
			t.Helper()
			_, err := s.Heartbeat(ctx, Heartbeat{ID: id, Queues: []string{"q"}, Kinds: []string{kind}, Concurrency: concurrency,
				InFlight: inFlight, Liveness: time.Hour})
			must(err)
		}
		busy := func(id string) *Reason {
			t.Helper()
			e, err := s.Why(ctx, id, nil)
			must(err)
			i := slices.IndexFunc(e.Reasons, func(r Reason) bool { return r.Reason == WhyWorkersBusy })
			if i < 0 {
				return nil
			}
			return &e.Reasons[i]
		}
		beat("w1", "k", 2, 2)
		beat("w3", "other", 0, 1) // not of the job's kind: it could not run it anyway
		r := busy("a")
		if r == nil || r.Queue != "q" || r.Running != 2 || r.Cap != 2 || r.Worker != "" {
			t.Fatalf("a with its only worker full: %+v, want workers_busy 2 of 2", r)
		}
		if got, want := r.Sentence(frozenEpoch), "every live worker of its queue q that handles it is busy: 2 jobs in flight of 2 at their last heartbeats"; got != want {
			t.Errorf("sentence %q, want %q", got, want)
		}
		if r := busy("p"); r == nil || r.Worker != "w1" || r.Running != 2 || r.Cap != 2 {
			t.Errorf("p pinned to the full w1: %+v, want workers_busy naming w1", r)
		}
		beat("w2", "k", 0, 3)
		if r := busy("a"); r != nil {
			t.Errorf("a with w2's slots free: %+v, want no workers_busy", r)
		}
		beat("w2", "k", 3, 3)
		if r := busy("a"); r == nil || r.Running != 5 || r.Cap != 5 {
			t.Errorf("a with both workers full: %+v, want workers_busy 5 of 5", r)
		}
		beat("w1", "k", 0, 0) // no concurrency said: not known to be busy
		if r := busy("a"); r != nil {
			t.Errorf("a beside a worker without a concurrency: %+v, want no workers_busy", r)
		}
		if r := busy("p"); r != nil {
			t.Errorf("p pinned to w1 without a concurrency: %+v, want no workers_busy", r)
		}
	})
}

// A rate class at limit 0 never refills: the sentence says so, not a time the tokens come.
func TestWhyRateLimitedNeverSentence(t *testing.T) {
	t.Parallel()
	r := Reason{Reason: WhyRateLimited, Class: "api", Tokens: 0, Weight: 2, Burst: 1}
	if got, want := r.Sentence(frozenEpoch), "its rate class api has 0 of the 2 tokens it needs (burst 1) and never refills: its limit is 0"; got != want {
		t.Errorf("sentence = %q, want %q", got, want)
	}
}
