package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// TestCronSoak: three workers, each holding the cron duty in turn with a 30 ms lease,
// are killed, stopped and restarted at random (deterministic seed) over 500 minutes of
// a schedule that ticks every minute, on the stepped store clock; at times the whole
// fleet is down for a few ticks. Exactly one job per tick comes out: 500 jobs, none
// skipped, none refused.
func TestCronSoak(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		const minutes = 500
		ctx := context.Background()
		ns := redistest.Namespace(t)
		store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
		mustOK(t, err)
		start := epoch.Truncate(time.Minute).Add(30 * time.Second)
		mustOK(t, store.FreezeClock(ctx, start))
		_, err = store.AddSchedule(ctx, headgate.Schedule{Name: "minutely", Cron: "*/1 * * * *",
			Job:     headgate.Envelope{Kind: "report", Queue: "reports", Retention: 24 * time.Hour},
			Misfire: headgate.Misfire{Policy: headgate.MisfireCatchUp, Grace: 45 * time.Second, Max: 10, Window: 10 * time.Minute}})
		mustOK(t, err)

		rng := rand.New(rand.NewPCG(15, 500))
		var fleet [3]*worker.Worker
		gen := 0
		launch := func(slot int) {
			gen++
			cfg := testConfig(t, ns)
			cfg.ID = fmt.Sprintf("w%d-%d", slot, gen)
			cfg.Queues = []string{"idle"} // the cron jobs stay where they were put, to be counted
			cfg.DutyLease = 30 * time.Millisecond
			cfg.CronInterval = 2 * time.Millisecond
			w, err := worker.New(rdb, &cfg)
			mustOK(t, err)
			worker.HandleFunc(w, "idle", func(context.Context, *headgate.Claim) error { return nil })
			mustOK(t, w.Start(ctx))
			fleet[slot] = w
		}
		down := func(slot int) {
			w := fleet[slot]
			fleet[slot] = nil
			if rng.IntN(2) == 0 {
				worker.Kill(w) // a crash: the duty stays with it until its lease runs out
				return
			}
			sctx, cancel := context.WithTimeout(ctx, waitLimit)
			defer cancel()
			mustOK(t, w.Stop(sctx))
		}
		alive := func() int {
			n := 0
			for _, w := range fleet {
				if w != nil {
					n++
				}
			}
			return n
		}
		t.Cleanup(func() {
			for slot, w := range fleet {
				if w != nil {
					down(slot)
				}
			}
		})
		// waitFired waits until the schedule's mark reaches tick. A holder killed in the
		// middle of the minute keeps the duty while the store clock stands still, so a
		// wait that makes no progress steps the clock by 100 ms: every lease runs out.
		waitFired := func(tick time.Time) {
			deadline := time.Now().Add(waitLimit)
			poll := time.NewTicker(2 * time.Millisecond)
			defer poll.Stop()
			for polls := 1; ; polls++ {
				st, err := store.GetSchedule(ctx, "minutely")
				mustOK(t, err)
				if !st.Mark.Before(tick) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("tick %s not fired within %s (mark %s, %d workers up)", tick, waitLimit, st.Mark, alive())
				}
				if polls%50 == 0 {
					mustOK(t, store.AdvanceClock(ctx, 100*time.Millisecond))
				}
				<-poll.C
			}
		}

		for slot := range fleet {
			launch(slot)
		}
		downFor := 0
		for m := 1; m <= minutes; m++ {
			mustOK(t, store.AdvanceClock(ctx, time.Minute))
			tick := start.Truncate(time.Minute).Add(time.Duration(m) * time.Minute)
			// Before the tick fires: one worker may go down in the middle of the minute.
			if slot := rng.IntN(8); slot < len(fleet) && fleet[slot] != nil && alive() > 1 {
				down(slot)
			}
			if alive() > 0 {
				waitFired(tick)
				downFor = 0
			} else {
				downFor++ // the fleet is down: the tick waits for the next worker up
			}
			for slot := range fleet {
				switch {
				case fleet[slot] == nil && (rng.IntN(4) == 0 || downFor >= 4):
					launch(slot)
					downFor = 0
				case fleet[slot] != nil && rng.IntN(6) == 0:
					down(slot)
				}
			}
		}
		if alive() == 0 {
			launch(0)
		}
		last := start.Truncate(time.Minute).Add(minutes * time.Minute)
		waitFired(last)

		st, err := store.GetSchedule(ctx, "minutely")
		mustOK(t, err)
		if st.Fired != minutes || st.Skipped != 0 || st.Refused != 0 || !st.LastTick.Equal(last) {
			t.Errorf("fired %d skipped %d refused %d last tick %s; want %d, 0, 0, %s", st.Fired, st.Skipped, st.Refused, st.LastTick, minutes, last)
		}
		stats, err := store.QueueStats(ctx)
		mustOK(t, err)
		for _, q := range stats {
			if q.Queue == "reports" && q.Counts[headgate.StateAvailable] != minutes {
				t.Errorf("queue reports holds %v, want %d available jobs", q.Counts, minutes)
			}
		}
		for m := 1; m <= minutes; m++ {
			id := headgate.ScheduleJobID("minutely", start.Truncate(time.Minute).Add(time.Duration(m)*time.Minute))
			if _, err := store.GetJob(ctx, id); err != nil {
				t.Errorf("tick %d: %v", m, err)
			}
		}
		// Each minute the duty's lease ran out, so it changed hands about once a minute
		// (not in the minutes the fleet was down): the fence counts the tenures.
		for slot, w := range fleet {
			if w != nil {
				down(slot)
			}
		}
		mustOK(t, store.AdvanceClock(ctx, time.Second))
		probe, err := store.ClaimDutyLease(ctx, worker.DutyCron, "probe", time.Millisecond)
		mustOK(t, err)
		if probe.Fence < minutes/2 {
			t.Errorf("the cron duty had %d tenures over %d minutes, want one in most minutes", probe.Fence-1, minutes)
		}
		t.Logf("%d worker generations, %d cron duty tenures", gen, probe.Fence-1)
	})
}
