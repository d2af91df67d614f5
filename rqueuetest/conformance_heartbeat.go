package rqueuetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// heartbeatCases cover the Heartbeat transition and what reads make of it: the worker
// listing, liveness on the store clock, the queues without a live worker, and pruning.
var heartbeatCases = []conformanceCase{
	{"Heartbeat/LiveThenDead", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		hb := headgate.Heartbeat{ID: "w1", Host: "h1", PID: 42, Queues: []string{headgate.QueueDefault, "other"},
			Kinds: []string{"k1", "k2"}, Concurrency: 8, InFlight: 3, Started: epoch.Add(-time.Minute),
			Liveness: 15 * time.Second}
		at, err := s.Heartbeat(ctx, hb)
		if err != nil || !at.Equal(epoch) {
			t.Fatalf("heartbeat: %v at %v, want epoch", err, at)
		}
		want := headgate.WorkerStatus{Heartbeat: hb, LastSeen: epoch, LiveUntil: epoch.Add(15 * time.Second), Live: true}
		wantWorkers(t, s, want)
		wantServed(t, s, headgate.QueueDefault, 1, false)
		// One step short of the liveness window the worker is live; at its end, not.
		advance(t, ctx, s, 15*time.Second-time.Millisecond)
		wantWorkers(t, s, want)
		advance(t, ctx, s, time.Millisecond)
		want.Live = false
		wantWorkers(t, s, want)
		wantServed(t, s, headgate.QueueDefault, 0, true)
		// A beat brings it back.
		beat(t, ctx, s, "w1", time.Minute)
		wantServed(t, s, headgate.QueueDefault, 1, false)
	}},
	{"Heartbeat/StoppedIsNotLive", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.Pending = true
		mustEnqueue(t, ctx, s, e)
		beat(t, ctx, s, "w1", 0)
		got := mustWorkers(t, s)
		if len(got) != 1 || got[0].Live || !got[0].Stopped || !got[0].LastSeen.Equal(epoch) {
			t.Errorf("workers after a stopping beat: %+v", got)
		}
		// Staged work alone needs no worker.
		wantServed(t, s, headgate.QueueDefault, 0, false)
	}},
	{"Heartbeat/PrunedAfterRetention", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		beat(t, ctx, s, "old", time.Minute)
		advance(t, ctx, s, headgate.WorkerRetention)
		beat(t, ctx, s, "w1", time.Minute)
		if got := mustWorkers(t, s); len(got) != 2 {
			t.Errorf("workers at the retention's end: %+v, want old and w1", got)
		}
		advance(t, ctx, s, time.Millisecond)
		beat(t, ctx, s, "w1", time.Minute)
		got := mustWorkers(t, s)
		if len(got) != 1 || got[0].ID != "w1" {
			t.Errorf("workers past the retention: %+v, want w1 alone", got)
		}
		n, err := s.Client().ZCard(ctx, nsKey(s, "q:"+headgate.QueueDefault+":workers")).Result()
		if err != nil || n != 1 {
			t.Errorf("workers of the default queue: %d (%v), want 1", n, err)
		}
	}},
	{"Heartbeat/Refusals", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		for _, hb := range []headgate.Heartbeat{
			{Queues: []string{"q"}},
			{ID: "a:b", Queues: []string{"q"}},
			{ID: "w"},
			{ID: "w", Queues: []string{"q"}, Liveness: -time.Second},
		} {
			if _, err := s.Heartbeat(ctx, hb); wantErr[*headgate.InvalidError](t, err) == nil {
				t.Errorf("heartbeat %+v: %v", hb, err)
			}
		}
		// A workers key of the wrong type refuses the beat, nothing written.
		if err := s.Client().Set(ctx, nsKey(s, "workers"), "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		err := unchanged(t, ctx, s, "a heartbeat over a corrupt workers key", func() error {
			_, err := s.Heartbeat(ctx, headgate.Heartbeat{ID: "w", Queues: []string{"q"}})
			return err
		})
		if wantErr[*headgate.CorruptError](t, err) == nil {
			t.Errorf("heartbeat over a corrupt workers key: %v", err)
		}
		if err := s.Client().Del(ctx, nsKey(s, "workers")).Err(); err != nil {
			t.Fatal(err)
		}
	}},
}

func mustWorkers(t testing.TB, s *headgate.Store) []headgate.WorkerStatus {
	t.Helper()
	got, err := s.Workers(ctxFor(t))
	if err != nil {
		t.Fatalf("workers: %v", err)
	}
	return got
}

// wantWorkers checks the listing, its times compared as instants.
func wantWorkers(t testing.TB, s *headgate.Store, want ...headgate.WorkerStatus) {
	t.Helper()
	got := mustWorkers(t, s)
	norm := func(ws []headgate.WorkerStatus) []headgate.WorkerStatus {
		out := make([]headgate.WorkerStatus, len(ws))
		for i, w := range ws {
			for _, t := range []*time.Time{&w.Started, &w.LastSeen, &w.LiveUntil} {
				*t = time.UnixMilli(t.UnixMilli()).UTC()
			}
			out[i] = w
		}
		return out
	}
	if !reflect.DeepEqual(norm(got), norm(want)) {
		t.Errorf("workers:\n got %+v\nwant %+v", got, want)
	}
}

// wantServed checks a queue's live workers and whether its stats flag it unserved.
func wantServed(t testing.TB, s *headgate.Store, queue string, live int64, unserved bool) {
	t.Helper()
	stats, err := s.QueueStats(ctxFor(t))
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	for _, st := range stats {
		if st.Queue == queue {
			if st.LiveWorkers != live || st.Unserved != unserved {
				t.Errorf("queue %s: %d live workers, unserved %v; want %d, %v", queue, st.LiveWorkers, st.Unserved, live, unserved)
			}
			return
		}
	}
	t.Errorf("stats list no queue %s: %+v", queue, stats)
}
