package rqueuetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// AssertStickyRouting proves strict sticky routing on a live store: a 5,000-job
// high-priority backlog pinned to another worker must not hide the caller's pinned or
// ordinary work; a rate-limited requeue keeps the route; another worker cannot take
// pinned work, and the worker it is pinned to can.
func AssertStickyRouting(t testing.TB, s *headgate.Store) {
	t.Helper()
	ctx := ctxFor(t)
	const queue = "sticky"
	env := func(id, sticky string, priority int32) headgate.Envelope {
		return headgate.Envelope{ID: id, Kind: "test:sticky", Payload: []byte("{}"), Queue: queue,
			PartitionKey: "tenant", Fingerprint: "fp-sticky", Priority: priority, StickyWorker: sticky,
			ScheduledAt: time.UnixMilli(1), Retention: 24 * time.Hour}
	}
	batch := make([]headgate.Envelope, 0, 5002)
	for i := range 5000 {
		batch = append(batch, env(fmt.Sprintf("%s-b-%04d", queue, i), "worker-b", 10_000))
	}
	aID, generalID := queue+"-a", queue+"-general"
	batch = append(batch, env(aID, "worker-a", 50), env(generalID, "", 1))
	for chunk := range slices.Chunk(batch, 500) {
		if _, err := s.Enqueue(ctx, chunk...); err != nil {
			t.Fatalf("sticky enqueue: %v", err)
		}
	}
	req := func(worker, lease string, capacity int) headgate.AdmitRequest {
		return headgate.AdmitRequest{Worker: worker, LeaseID: lease, Queues: []string{queue},
			Capacity: capacity, Lease: time.Minute, Quantum: 10_000}
	}
	claims, err := s.Admit(ctx, req("worker-a", "sticky-la", 2))
	if err != nil {
		t.Fatalf("worker-a admit: %v", err)
	}
	got := ids(claims)
	slices.Sort(got)
	if !slices.Equal(got, []string{aID, generalID}) {
		t.Fatalf("worker-a admitted %v, want [%s %s]: pinned work of another worker hid its own", got, aID, generalID)
	}
	for _, c := range claims {
		switch c.Envelope.ID {
		case aID:
			if c.Envelope.StickyWorker != "worker-a" {
				t.Errorf("claim of %s lost its route: sticky %q", aID, c.Envelope.StickyWorker)
			}
			if _, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeRateLimited, nil); err != nil {
				t.Fatalf("route-preserving requeue: %v", err)
			}
		case generalID:
			if _, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeSuccess, nil); err != nil {
				t.Fatalf("general completion: %v", err)
			}
		}
	}
	if c, err := s.Admit(ctx, req("worker-c", "sticky-lc", 2)); err != nil || len(c) != 0 {
		t.Fatalf("worker-c admitted %v (%v): another worker must not claim pinned work", ids(c), err)
	}
	again, err := s.Admit(ctx, req("worker-a", "sticky-la2", 1))
	if err != nil || len(again) != 1 || again[0].Envelope.ID != aID {
		t.Fatalf("worker-a re-admit: %v (%v), want [%s]: rate-limited requeue must keep the route", ids(again), err, aID)
	}
	b, err := s.Admit(ctx, req("worker-b", "sticky-lb", 1))
	if err != nil || len(b) != 1 || !strings.HasPrefix(b[0].Envelope.ID, queue+"-b-") {
		t.Fatalf("worker-b admit: %v (%v), want one of its pinned jobs", ids(b), err)
	}
}

// AssertEnqueueBackpressure proves bounded enqueue on a live store under contention:
// 64 producers race for 25 slots, then it checks idempotent replay at the limit, atomic
// batch rejection, capacity released by terminalization, lowering the limit below the
// current depth, and removing the limit.
func AssertEnqueueBackpressure(t testing.TB, s *headgate.Store, queue string) {
	t.Helper()
	ctx := ctxFor(t)
	env := func(id string) headgate.Envelope {
		return headgate.Envelope{ID: id, Kind: "test:backpressure", Payload: []byte("{}"), Queue: queue,
			Fingerprint: "fp-backpressure-" + queue, ScheduledAt: time.UnixMilli(1), Retention: 24 * time.Hour}
	}
	if err := s.SetEnqueueLimit(ctx, queue, 25); err != nil {
		t.Fatalf("configure enqueue limit: %v", err)
	}
	var (
		mu       sync.Mutex
		accepted []string
		rejected int
		wg       sync.WaitGroup
	)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("%s-bp-%d", queue, i)
			_, err := s.Enqueue(ctx, env(id))
			mu.Lock()
			defer mu.Unlock()
			var bp *headgate.BackpressureError
			switch {
			case err == nil:
				accepted = append(accepted, id)
			case errors.As(err, &bp):
				if bp.Queue != queue || bp.Limit != 25 || bp.Incoming != 1 || bp.Current > 25 {
					t.Errorf("backpressure error %+v, want queue %s limit 25 incoming 1 current <= 25", bp, queue)
				}
				rejected++
			default:
				t.Errorf("unexpected concurrent enqueue result: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(accepted) != 25 || rejected != 39 {
		t.Fatalf("accepted %d rejected %d, want 25 and 39: the store must never over-admit", len(accepted), rejected)
	}
	stat := queueStat(t, s, queue)
	if stat.Unfinished != 25 || stat.Limit == nil || *stat.Limit != 25 {
		t.Errorf("stats: unfinished %d limit %v, want 25 and 25", stat.Unfinished, stat.Limit)
	}
	if _, err := s.Enqueue(ctx, env(accepted[0])); err != nil {
		t.Errorf("idempotent replay at the limit: %v", err)
	}
	batch := []headgate.Envelope{env(queue + "-batch-a"), env(queue + "-batch-b")}
	_, err := s.Enqueue(ctx, batch...)
	var bp *headgate.BackpressureError
	if !errors.As(err, &bp) || bp.Limit != 25 || bp.Current != 25 || bp.Incoming != 2 {
		t.Errorf("full batch: %v, want Backpressure limit 25 current 25 incoming 2", err)
	}
	for _, e := range batch {
		if _, err := s.GetJob(ctx, e.ID); !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("a rejected batch wrote job %s (%v)", e.ID, err)
		}
	}
	if err := s.Cancel(ctx, accepted[0]); err != nil {
		t.Fatalf("terminalization: %v", err)
	}
	if _, err := s.Enqueue(ctx, env(queue+"-replacement")); err != nil {
		t.Errorf("replacement after a slot was released: %v", err)
	}
	if err := s.SetEnqueueLimit(ctx, queue, 10); err != nil {
		t.Fatalf("lower limit: %v", err)
	}
	_, err = s.Enqueue(ctx, env(queue+"-still-full"))
	if !errors.As(err, &bp) || bp.Limit != 10 || bp.Current != 25 || bp.Incoming != 1 {
		t.Errorf("below depth: %v, want Backpressure limit 10 current 25 incoming 1", err)
	}
	if err := s.RemoveEnqueueLimit(ctx, queue); err != nil {
		t.Fatalf("remove limit: %v", err)
	}
	if _, err := s.Enqueue(ctx, env(queue+"-unbounded")); err != nil {
		t.Errorf("removed limit still refuses: %v", err)
	}
	stat = queueStat(t, s, queue)
	if stat.Unfinished != 26 || stat.Limit != nil {
		t.Errorf("final stats: unfinished %d limit %v, want 26 and none", stat.Unfinished, stat.Limit)
	}
}

func queueStat(t testing.TB, s *headgate.Store, queue string) headgate.QueueStats {
	t.Helper()
	stats, err := s.QueueStats(ctxFor(t))
	if err != nil {
		t.Fatalf("queue stats: %v", err)
	}
	for _, st := range stats {
		if st.Queue == queue {
			return st
		}
	}
	t.Fatalf("no stats for queue %s in %+v", queue, stats)
	return headgate.QueueStats{}
}
