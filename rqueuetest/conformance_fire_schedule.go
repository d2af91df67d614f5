package rqueuetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// cronDuty is the duty the cases fire schedules under.
const cronDuty = "cron"

// cronFence claims the cron duty for holder with a long lease and returns its tenure.
func cronFence(t testing.TB, ctx context.Context, s *headgate.Store, holder string) headgate.DutyFence {
	t.Helper()
	return cronFenceFor(t, ctx, s, holder, time.Hour)
}

func cronFenceFor(t testing.TB, ctx context.Context, s *headgate.Store, holder string, lease time.Duration) headgate.DutyFence {
	t.Helper()
	l, err := s.ClaimDutyLease(ctx, cronDuty, holder, lease)
	if err != nil || !l.Held {
		t.Fatalf("claim the cron duty for %s: %+v, %v", holder, l, err)
	}
	return headgate.DutyFence{Duty: cronDuty, Holder: holder, Fence: l.Fence}
}

func mustFire(t testing.TB, ctx context.Context, s *headgate.Store, f headgate.DutyFence, name string) []headgate.TickResult {
	t.Helper()
	res, err := s.FireSchedule(ctx, f, name)
	if err != nil {
		t.Fatalf("fire %s: %v", name, err)
	}
	return res
}

func mustFireDue(t testing.TB, ctx context.Context, s *headgate.Store, f headgate.DutyFence) []headgate.TickResult {
	t.Helper()
	res, _, err := s.FireDueSchedules(ctx, f, 10)
	if err != nil {
		t.Fatalf("fire due schedules: %v", err)
	}
	return res
}

// ticksOf lists the ticks of results as UTC clock times ("22:14").
func ticksOf(res []headgate.TickResult) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.Tick.UTC().Format("15:04")
		if r.Outcome != headgate.TickEnqueued {
			out[i] += " " + string(r.Outcome)
		}
	}
	return out
}

// queueJobs counts the jobs of the default queue in every state.
func queueJobs(t testing.TB, ctx context.Context, s *headgate.Store) int64 {
	t.Helper()
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, q := range stats {
		if q.Queue == headgate.QueueDefault {
			for _, c := range q.Counts {
				n += c
			}
		}
	}
	return n
}

// misfireCase: a fleet that was down for ten minutes (every worker stopped at the add,
// at 22:13:20, and the first one back at 22:23:50) fires what the policy says.
func misfireCase(m headgate.Misfire, want []string, skipped int64) func(t *testing.T, s *headgate.Store) {
	return func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		sc := minuteSchedule("report")
		sc.Misfire = m
		mustAddSchedule(t, ctx, s, sc)
		advance(t, ctx, s, 10*time.Minute+30*time.Second)
		f := cronFence(t, ctx, s, "back")
		res := mustFireDue(t, ctx, s, f)
		if got := ticksOf(res); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("fired %v, want %v", got, want)
		}
		for _, r := range res {
			wantState(t, ctx, s, headgate.ScheduleJobID("report", r.Tick), headgate.StateAvailable)
		}
		st := mustGetSchedule(t, ctx, s, "report")
		if st.Fired != int64(len(want)) || st.Skipped != skipped || !st.Mark.Equal(time.Date(2023, 11, 14, 22, 23, 0, 0, time.UTC)) {
			t.Errorf("fired %d skipped %d mark %s; want %d, %d, 22:23", st.Fired, st.Skipped, st.Mark, len(want), skipped)
		}
		if skipped > 0 && st.LastSkippedTick.IsZero() {
			t.Errorf("skipped ticks but no last skipped tick")
		}
		// The next tick fires on time, once, whatever the policy.
		advance(t, ctx, s, 15*time.Second)
		if got := ticksOf(mustFireDue(t, ctx, s, f)); fmt.Sprint(got) != "[22:24]" {
			t.Errorf("next tick: fired %v, want [22:24]", got)
		}
		if got := ticksOf(mustFireDue(t, ctx, s, f)); len(got) != 0 {
			t.Errorf("a second pass fired %v", got)
		}
		if n := queueJobs(t, ctx, s); n != int64(len(want))+1 {
			t.Errorf("%d jobs, want one per fired tick (%d)", n, len(want)+1)
		}
	}
}

// fireScheduleCases cover FirePlan (and FireSchedule, FireDueSchedules over it).
var fireScheduleCases = []conformanceCase{
	{"FireSchedule/OneJobPerTickOnTime", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAddSchedule(t, ctx, s, minuteSchedule("report"))
		f := cronFence(t, ctx, s, "a")
		for range 3 {
			advance(t, ctx, s, time.Minute)
			mustFireDue(t, ctx, s, f)
			mustFireDue(t, ctx, s, f) // a second pass at the same time fires nothing
		}
		st := mustGetSchedule(t, ctx, s, "report")
		if st.Fired != 3 || st.LastJobID != "cron:report:2023-11-14T22:16:00.000Z" || !st.NextDue.Equal(time.Date(2023, 11, 14, 22, 17, 0, 0, time.UTC)) {
			t.Errorf("fired %d, last job %s, next due %s", st.Fired, st.LastJobID, st.NextDue)
		}
		j := getJob(t, ctx, s, "cron:report:2023-11-14T22:15:00.000Z")
		if j.Kind != "test:cron" || j.State != headgate.StateAvailable || !j.ScheduledAt.Equal(time.Date(2023, 11, 14, 22, 15, 0, 0, time.UTC)) {
			t.Errorf("tick job: kind %s state %s scheduled %s", j.Kind, j.State, j.ScheduledAt)
		}
		if n := queueJobs(t, ctx, s); n != 3 {
			t.Errorf("%d jobs, want 3", n)
		}
	}},
	{"FireSchedule/RestartAcrossTicks/Skip", misfireCase(headgate.Misfire{Policy: headgate.MisfireSkip}, []string{"22:23"}, 9)},
	{"FireSchedule/RestartAcrossTicks/SkipLateBeyondGrace", misfireCase(headgate.Misfire{Policy: headgate.MisfireSkip, Grace: 10 * time.Second}, []string{}, 10)},
	{"FireSchedule/RestartAcrossTicks/FireOnce", misfireCase(headgate.Misfire{Policy: headgate.MisfireFireOnce, Grace: 10 * time.Second}, []string{"22:23"}, 9)},
	{"FireSchedule/RestartAcrossTicks/CatchUp", misfireCase(headgate.Misfire{Policy: headgate.MisfireCatchUp, Grace: 10 * time.Second, Max: 3, Window: 5 * time.Minute},
		[]string{"22:21", "22:22", "22:23"}, 7)},
	{"FireSchedule/RestartAcrossTicks/CatchUpWindow", misfireCase(headgate.Misfire{Policy: headgate.MisfireCatchUp, Grace: 10 * time.Second, Max: 100, Window: 4 * time.Minute},
		[]string{"22:20", "22:21", "22:22", "22:23"}, 6)},
	{"FireSchedule/LeaderHandoffMidTick", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAddSchedule(t, ctx, s, minuteSchedule("report"))
		old := cronFenceFor(t, ctx, s, "old", 30*time.Second)
		advance(t, ctx, s, 50*time.Second) // 22:14:10: the tick is due, the old lease is over
		plan, err := s.PlanSchedule(ctx, "report")
		if err != nil || len(plan.Ticks) != 1 {
			t.Fatalf("plan: %+v, %v", plan, err)
		}
		if _, err := s.FirePlan(ctx, old, plan); !errors.Is(err, headgate.ErrDutyLost) {
			t.Errorf("fire on an expired lease: %v, want ErrDutyLost", err)
		}
		next := cronFenceFor(t, ctx, s, "new", 30*time.Second)
		if next.Fence <= old.Fence {
			t.Errorf("the new tenure's fence %d is not above the old one's %d", next.Fence, old.Fence)
		}
		// The old holder, back from a pause, fires its plan: refused, with its own fence or
		// the new one.
		if _, err := s.FirePlan(ctx, old, plan); !errors.Is(err, headgate.ErrDutyLost) {
			t.Errorf("fire with the old tenure: %v, want ErrDutyLost", err)
		}
		if _, err := s.FirePlan(ctx, headgate.DutyFence{Duty: cronDuty, Holder: "old", Fence: next.Fence}, plan); !errors.Is(err, headgate.ErrDutyLost) {
			t.Errorf("fire with another holder's fence: %v, want ErrDutyLost", err)
		}
		res, err := s.FirePlan(ctx, next, plan)
		if err != nil || len(res) != 1 || res[0].Outcome != headgate.TickEnqueued {
			t.Fatalf("the new holder's fire: %v, %v", res, err)
		}
		// The same plan again is a stale view of the schedule.
		var moved *headgate.ScheduleMovedError
		if _, err := s.FirePlan(ctx, next, plan); !errors.As(err, &moved) || !moved.Mark.Equal(plan.Mark) {
			t.Errorf("second fire of one plan: %v, want *ScheduleMovedError at the mark %s", err, plan.Mark)
		}
		// A released duty keeps its fence: the next tenure is higher still.
		if err := s.ReleaseDuty(ctx, cronDuty, "new"); err != nil {
			t.Fatal(err)
		}
		if again := cronFenceFor(t, ctx, s, "new", 30*time.Second); again.Fence <= next.Fence {
			t.Errorf("fence after release and claim: %d, want above %d", again.Fence, next.Fence)
		}
		if n := queueJobs(t, ctx, s); n != 1 {
			t.Errorf("%d jobs, want exactly 1", n)
		}
	}},
	{"FireSchedule/TwoFirersRace", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		sc := minuteSchedule("report")
		sc.Misfire = headgate.Misfire{Policy: headgate.MisfireCatchUp, Max: 100, Window: time.Hour}
		mustAddSchedule(t, ctx, s, sc)
		const ticks = 5
		for range ticks {
			advance(t, ctx, s, time.Minute)
			// Two holders race for the lapsed duty, each then firing twice at once (a pass
			// and a retry), as stale leaders do.
			if err := s.AdvanceClock(ctx, time.Second); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for _, holder := range []string{"a", "b"} {
				l, err := s.ClaimDutyLease(ctx, cronDuty, holder, 500*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				f := headgate.DutyFence{Duty: cronDuty, Holder: holder, Fence: l.Fence}
				for range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, _, err := s.FireDueSchedules(ctx, f, 10)
						if err != nil && !errors.Is(err, headgate.ErrDutyLost) {
							errs <- err
						}
					}()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("fire: %v", err)
			}
			advance(t, ctx, s, time.Second) // the lease lapses
		}
		st := mustGetSchedule(t, ctx, s, "report")
		if st.Fired != ticks || queueJobs(t, ctx, s) != ticks {
			t.Errorf("fired %d, %d jobs; want exactly one per tick (%d)", st.Fired, queueJobs(t, ctx, s), ticks)
		}
		for i := 1; i <= ticks; i++ {
			wantState(t, ctx, s, headgate.ScheduleJobID("report", time.Date(2023, 11, 14, 22, 13+i, 0, 0, time.UTC)), headgate.StateAvailable)
		}
	}},
	{"FireSchedule/ReplayAndTakenID", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		sc := minuteSchedule("report")
		sc.Misfire = headgate.Misfire{Policy: headgate.MisfireCatchUp, Max: 100, Window: time.Hour}
		mustAddSchedule(t, ctx, s, sc)
		same := sc.Job
		same.ID = headgate.ScheduleJobID("report", time.Date(2023, 11, 14, 22, 14, 0, 0, time.UTC))
		other := headgate.Envelope{ID: headgate.ScheduleJobID("report", time.Date(2023, 11, 14, 22, 15, 0, 0, time.UTC)), Kind: "other"}
		mustEnqueue(t, ctx, s, same, other)
		advance(t, ctx, s, 3*time.Minute)
		res := mustFire(t, ctx, s, cronFence(t, ctx, s, "a"), "report")
		if got := ticksOf(res); fmt.Sprint(got) != "[22:14 replayed 22:15 refused 22:16]" {
			t.Errorf("fired %v", got)
		}
		var conflict *headgate.IDConflictError
		if len(res) == 3 && !errors.As(res[1].Err, &conflict) {
			t.Errorf("taken id: %v, want *IDConflictError", res[1].Err)
		}
		st := mustGetSchedule(t, ctx, s, "report")
		if st.Fired != 1 || st.Refused != 1 || !st.LastRefusedTick.Equal(res[1].Tick) || st.LastRefusal == "" {
			t.Errorf("fired %d refused %d last refused %s (%q)", st.Fired, st.Refused, st.LastRefusedTick, st.LastRefusal)
		}
	}},
	{"FireSchedule/RefusalsAreRecorded", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		sc := minuteSchedule("report")
		sc.Job.UniqueKey = "nightly"
		sc.Misfire = headgate.Misfire{Policy: headgate.MisfireCatchUp, Max: 100, Window: time.Hour}
		mustAddSchedule(t, ctx, s, sc)
		f := cronFence(t, ctx, s, "a")
		advance(t, ctx, s, 2*time.Minute)
		res := mustFire(t, ctx, s, f, "report")
		var dup *headgate.DuplicateError
		if got := ticksOf(res); fmt.Sprint(got) != "[22:14 22:15 refused]" || !errors.As(res[1].Err, &dup) || dup.ExistingID != res[0].JobID {
			t.Errorf("fired %v (%v): the second tick's key is held by the first", got, res[len(res)-1].Err)
		}
		if err := s.SetEnqueueLimit(ctx, headgate.QueueDefault, 1); err != nil {
			t.Fatal(err)
		}
		sc.Job.UniqueKey = ""
		if _, err := s.UpdateSchedule(ctx, sc); err != nil {
			t.Fatal(err)
		}
		advance(t, ctx, s, time.Minute)
		res = mustFire(t, ctx, s, f, "report")
		var bp *headgate.BackpressureError
		if len(res) != 1 || res[0].Outcome != headgate.TickRefused || !errors.As(res[0].Err, &bp) || bp.Limit != 1 {
			t.Fatalf("at the enqueue limit fired %v (%v), want the tick refused with *BackpressureError", ticksOf(res), res)
		}
		st := mustGetSchedule(t, ctx, s, "report")
		if st.Refused != 2 || st.Fired != 1 || !st.LastRefusedTick.Equal(res[0].Tick) || st.LastRefusal != res[0].Err.Error() ||
			!st.Mark.Equal(res[0].Tick) {
			t.Errorf("refused %d fired %d last refused %s %q mark %s", st.Refused, st.Fired, st.LastRefusedTick, st.LastRefusal, st.Mark)
		}
		if n := queueJobs(t, ctx, s); n != 1 {
			t.Errorf("%d jobs, want 1", n)
		}
	}},
	{"FireSchedule/IntervalFromStart", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		sc := minuteSchedule("every")
		sc.Cron, sc.Interval, sc.Start = "", 90*time.Second, epoch.Add(-time.Hour)
		mustAddSchedule(t, ctx, s, sc)
		f := cronFence(t, ctx, s, "a")
		advance(t, ctx, s, 4*time.Minute)
		res := mustFire(t, ctx, s, f, "every")
		// epoch-1h + k*90s: ... 22:13:20 is k=40; next 22:14:50, 22:16:20 (22:17:20 now).
		if got := fmt.Sprint(ticksOf(res)); got != "[22:16]" {
			t.Errorf("fired %s; the on-time tick is 22:16:20 (22:14:50 is late: fire once takes the tick on time)", got)
		}
		if st := mustGetSchedule(t, ctx, s, "every"); !st.NextDue.Equal(time.Date(2023, 11, 14, 22, 17, 50, 0, time.UTC)) || st.Skipped != 1 {
			t.Errorf("next due %s skipped %d", st.NextDue, st.Skipped)
		}
	}},
	{"FireSchedule/DaylightSavingTime", func(t *testing.T, s *headgate.Store) {
		ctx := ctxFor(t)
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		lordHowe, err := time.LoadLocation("Australia/Lord_Howe") // clocks change by half an hour
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			zone  *time.Location
			cron  string
			from  time.Time
			ticks []string // UTC
		}{
			// Spring forward: 02:30 does not exist on 8 March; it fires at 03:00 EDT.
			{ny, "30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), []string{"03-08 07:00", "03-09 06:30"}},
			// Fall back: 01:30 occurs twice on 1 November; it fires the first time.
			{ny, "30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), []string{"11-01 05:30", "11-02 06:30"}},
			// Every hour follows elapsed time: both 01:00s fire, no 02:00 on 8 March.
			{ny, "0 * * * *", time.Date(2026, 11, 1, 0, 30, 0, 0, ny), []string{"11-01 05:00", "11-01 06:00", "11-01 07:00"}},
			{ny, "0 * * * *", time.Date(2026, 3, 8, 0, 30, 0, 0, ny), []string{"03-08 06:00", "03-08 07:00", "03-08 08:00"}},
			{berlin, "30 2 * * *", time.Date(2026, 3, 28, 12, 0, 0, 0, berlin), []string{"03-29 01:00", "03-30 00:30"}},
			{berlin, "30 2 * * *", time.Date(2026, 10, 24, 12, 0, 0, 0, berlin), []string{"10-25 00:30", "10-26 01:30"}},
			// A daily tick on the days the clocks move by half an hour: 02:00 +10:30 is
			// 02:30 +11 on 4 October, 02:00 +11 is 01:30 +10:30 on 5 April.
			{lordHowe, "0 0 * * *", time.Date(2026, 10, 3, 12, 0, 0, 0, lordHowe), []string{"10-03 13:30", "10-04 13:00"}},
			{lordHowe, "0 12 * * *", time.Date(2026, 4, 4, 13, 0, 0, 0, lordHowe), []string{"04-05 01:30"}},
		} {
			name := fmt.Sprintf("dst-%d", c.from.Unix())
			if err := s.FreezeClock(ctx, c.from); err != nil {
				t.Fatal(err)
			}
			mustAddSchedule(t, ctx, s, headgate.Schedule{Name: name, Cron: c.cron, Zone: c.zone.String(),
				Job: headgate.Envelope{Kind: "test:cron", Queue: "dst", Retention: time.Hour}})
			var got []string
			span := 40 * time.Hour
			if len(c.ticks) == 3 {
				span = 3 * time.Hour
			}
			// A worker's passes, every 20 minutes of store time.
			for step := time.Duration(0); step < span; step += 20 * time.Minute {
				advance(t, ctx, s, 20*time.Minute)
				for _, r := range mustFire(t, ctx, s, cronFence(t, ctx, s, "a"), name) {
					got = append(got, r.Tick.UTC().Format("01-02 15:04"))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.ticks) {
				t.Errorf("%s %q from %s: fired %v, want %v", c.zone, c.cron, c.from, got, c.ticks)
			}
		}
	}},
	{"FireSchedule/CorruptScheduleHoldsNoOtherBack", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAddSchedule(t, ctx, s, minuteSchedule("a"))
		mustAddSchedule(t, ctx, s, minuteSchedule("b"))
		key := nsKey(s, "cron:a")
		if err := s.Client().HSet(ctx, key, "def", "{not json").Err(); err != nil {
			t.Fatal(err)
		}
		advance(t, ctx, s, time.Minute)
		res, _, err := s.FireDueSchedules(ctx, cronFence(t, ctx, s, "w"), 10)
		var bad *headgate.CorruptError
		if !errors.As(err, &bad) {
			t.Errorf("fire: %v, want the *CorruptError of schedule a", err)
		}
		if len(res) != 1 || res[0].Schedule != "b" || res[0].Outcome != headgate.TickEnqueued {
			t.Errorf("fired %+v, want b's tick", res)
		}
	}},
}
