package rqueue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
)

// A schedule made from typed args enqueues, at each tick, the job Enqueue would: the
// args' own options, the client's defaults, the args encoded as msgpack.
func TestAddScheduleWithTypedArgs(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	b := setup(t, rdb, &rqueue.Config{Retention: time.Hour})
	sc := headgate.Schedule{Name: "daily-report", Cron: "@daily", Zone: "America/New_York"}
	if err := b.client.AddSchedule(b.ctx, sc, reportArgs{Account: "acme"}, &rqueue.EnqueueOpts{Partition: "acme"}); err != nil {
		t.Fatal(err)
	}
	err := b.client.AddSchedule(b.ctx, headgate.Schedule{Name: "x", Cron: "@daily"}, reportArgs{}, &rqueue.EnqueueOpts{ID: "fixed"})
	var inv *headgate.InvalidError
	if !errors.As(err, &inv) || inv.Field != "opts.ID" {
		t.Errorf("a fixed id: %v, want *InvalidError for opts.ID", err)
	}
	// Options a tick sets itself, or that a schedule's job cannot have, are refused
	// naming the option the caller set, not the store's envelope field.
	for field, opts := range map[string]*rqueue.EnqueueOpts{
		"opts.ScheduledAt":     {ScheduledAt: time.Now().Add(time.Hour)},
		"opts.ScheduledIn":     {ScheduledIn: time.Hour},
		"opts.Pending":         {Pending: true},
		"opts.Unique.Debounce": {Unique: rqueue.UniqueOpts{Key: "k", Debounce: time.Minute}},
		"opts.Unique.Replace":  {Unique: rqueue.UniqueOpts{Key: "k", Replace: headgate.ReplacePayload}},
	} {
		err := b.client.AddSchedule(b.ctx, headgate.Schedule{Name: "x", Cron: "@daily"}, reportArgs{}, opts)
		if !errors.As(err, &inv) || inv.Field != field {
			t.Errorf("AddSchedule with %s set: %v, want *InvalidError for %s", field, err, field)
		}
		err = b.client.UpdateSchedule(b.ctx, sc, reportArgs{}, opts)
		if !errors.As(err, &inv) || inv.Field != field {
			t.Errorf("UpdateSchedule with %s set: %v, want *InvalidError for %s", field, err, field)
		}
	}
	// The same holds of the args' own options, and of an option the store refuses.
	for field, c := range map[string]struct {
		args rqueue.Args
		opts *rqueue.EnqueueOpts
	}{
		"opts.Unique.Debounce": {debouncedArgs{}, nil},
		"opts.Queue":           {reportArgs{}, &rqueue.EnqueueOpts{Queue: "a:b"}},
		"opts.Partition":       {reportArgs{}, &rqueue.EnqueueOpts{Partition: "a{b}"}},
	} {
		err := b.client.AddSchedule(b.ctx, headgate.Schedule{Name: "x", Cron: "@daily"}, c.args, c.opts)
		if !errors.As(err, &inv) || inv.Field != field {
			t.Errorf("AddSchedule of %T with %+v: %v, want *InvalidError for %s", c.args, c.opts, err, field)
		}
		err = b.client.UpdateSchedule(b.ctx, sc, c.args, c.opts)
		if !errors.As(err, &inv) || inv.Field != field {
			t.Errorf("UpdateSchedule of %T with %+v: %v, want *InvalidError for %s", c.args, c.opts, err, field)
		}
	}
	// epoch is 2030-01-02 03:04:05 UTC, 22:04 the day before in New York: midnight is
	// 05:00 UTC.
	if err := b.store.AdvanceClock(b.ctx, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	l, err := b.store.ClaimDutyLease(b.ctx, "cron", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.store.FireSchedule(b.ctx, headgate.DutyFence{Duty: "cron", Holder: "test", Fence: l.Fence}, "daily-report")
	if err != nil || len(res) != 1 || res[0].Outcome != headgate.TickEnqueued {
		t.Fatalf("fire: %v, %v", res, err)
	}
	j := b.job(t, res[0].JobID)
	var args reportArgs
	if err := msgpack.Unmarshal(j.Payload, &args); err != nil || args.Account != "acme" {
		t.Errorf("payload: %+v, %v", args, err)
	}
	if j.Kind != "report" || j.Queue != "reports" || j.Priority != 5 || j.MaxAttempts != 3 || j.PartitionKey != "acme" ||
		j.Retention != time.Hour || !j.ScheduledAt.Equal(time.Date(2030, 1, 2, 5, 0, 0, 0, time.UTC)) {
		t.Errorf("tick job: %+v", j)
	}
	if err := b.client.UpdateSchedule(b.ctx, sc, reportArgs{Account: "globex"}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := b.store.GetSchedule(b.ctx, "daily-report")
	if err != nil || st.Revision != 2 || st.Job.PartitionKey != "" || st.Fired != 1 {
		t.Errorf("after update: %+v, %v", st, err)
	}
}

// debouncedArgs debounce by their kind's default options.
type debouncedArgs struct{}

func (debouncedArgs) Kind() string { return "debounced" }

func (debouncedArgs) EnqueueOpts() rqueue.EnqueueOpts {
	return rqueue.EnqueueOpts{Unique: rqueue.UniqueOpts{Key: "k", Debounce: time.Minute}}
}
