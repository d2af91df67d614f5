package worker_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/headgate/headgate"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// A worker runs the cron duty with no schedule configuration of its own: it fires what
// the namespace holds, and logs a tick the namespace refused (here at the queue's
// enqueue limit), which the schedule also counts, and a schedule it cannot read.
func TestCronDutyFiresAndLogsRefusals(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	logs := newLogRecorder()
	b := setup(t, rdb, func(c *worker.Config) {
		c.CronInterval = 2 * time.Millisecond
		c.Logger = slog.New(logs)
	})
	ctx := context.Background()
	worker.HandleFunc(b.worker, "report", func(context.Context, *headgate.Claim) error { return nil })
	_, err := b.store.AddSchedule(ctx, headgate.Schedule{Name: "report", Cron: "* * * * *",
		Job: headgate.Envelope{Kind: "report", Queue: "reports"}})
	mustOK(t, err)
	mustOK(t, b.store.SetEnqueueLimit(ctx, "reports", 0))
	b.start()
	b.advance(time.Minute)
	logs.waitLog(t, "schedule tick refused")
	st, err := b.store.GetSchedule(ctx, "report")
	mustOK(t, err)
	if st.Refused != 1 || st.Fired != 0 {
		t.Errorf("refused %d fired %d, want 1 and 0", st.Refused, st.Fired)
	}
	mustOK(t, rdb.HSet(ctx, "hg:{"+b.store.Namespace()+"}:cron:report", "def", "[").Err())
	b.advance(time.Minute)
	logs.waitLog(t, "schedule data unusable")
}
