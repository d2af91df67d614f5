package rqueuetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// minuteSchedule is a schedule that ticks at every minute of the clock (UTC).
func minuteSchedule(name string) headgate.Schedule {
	return headgate.Schedule{Name: name, Cron: "* * * * *",
		Job: headgate.Envelope{Kind: "test:cron", Payload: []byte(`{"report":1}`), Retention: time.Hour}}
}

func mustAddSchedule(t testing.TB, ctx context.Context, s *headgate.Store, sc headgate.Schedule) {
	t.Helper()
	if _, err := s.AddSchedule(ctx, sc); err != nil {
		t.Fatalf("add schedule %s: %v", sc.Name, err)
	}
}

func mustGetSchedule(t testing.TB, ctx context.Context, s *headgate.Store, name string) *headgate.ScheduleState {
	t.Helper()
	st, err := s.GetSchedule(ctx, name)
	if err != nil {
		t.Fatalf("get schedule %s: %v", name, err)
	}
	return st
}

// putScheduleCases cover AddSchedule and UpdateSchedule.
var putScheduleCases = []conformanceCase{
	{"PutSchedule/AddStartsAtNowAndKeepsTheDefinition", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		sc := minuteSchedule("report")
		sc.Zone = "Europe/Berlin"
		sc.Job.PartitionKey, sc.Job.Priority, sc.Job.Tags = "tenant-1", 7, []string{"b", "a"}
		rev, err := s.AddSchedule(ctx, sc)
		if err != nil || rev != 1 {
			t.Fatalf("add: revision %d, %v", rev, err)
		}
		st := mustGetSchedule(t, ctx, s, "report")
		if !st.Mark.Equal(epoch) || !st.NextDue.Equal(epoch) || !st.Created.Equal(epoch) || st.Paused || st.Revision != 1 {
			t.Errorf("added: mark %s next due %s created %s paused %t revision %d; want all at the store's now, active, 1",
				st.Mark, st.NextDue, st.Created, st.Paused, st.Revision)
		}
		if st.Cron != sc.Cron || st.Zone != "Europe/Berlin" || st.Misfire.Policy != headgate.MisfireFireOnce ||
			st.Misfire.Grace != headgate.MisfireGraceDefault {
			t.Errorf("definition read back as %+v (misfire %+v)", st.Schedule, st.Misfire)
		}
		j := st.Job
		if j.Kind != "test:cron" || j.Queue != headgate.QueueDefault || j.PartitionKey != "tenant-1" || j.Priority != 7 ||
			fmt.Sprint(j.Tags) != "[a b]" || j.MaxAttempts != headgate.MaxAttemptsDefault || string(j.Payload) != `{"report":1}` {
			t.Errorf("template read back as %+v", j)
		}
		_, err = s.AddSchedule(ctx, minuteSchedule("report"))
		var exists *headgate.ScheduleExistsError
		if !errors.As(err, &exists) || exists.Name != "report" {
			t.Errorf("second add: %v, want *ScheduleExistsError", err)
		}
		if again := mustGetSchedule(t, ctx, s, "report"); again.Zone != "Europe/Berlin" || again.Revision != 1 {
			t.Errorf("a refused add changed the schedule: %+v", again)
		}
	}},
	{"PutSchedule/UpdateKeepsMarkPauseAndCounters", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAddSchedule(t, ctx, s, minuteSchedule("report"))
		f := cronFence(t, ctx, s, "a")
		advance(t, ctx, s, time.Minute)
		mustFire(t, ctx, s, f, "report")
		if _, err := s.PauseSchedule(ctx, "report"); err != nil {
			t.Fatal(err)
		}
		before := mustGetSchedule(t, ctx, s, "report")
		sc := minuteSchedule("report")
		sc.Cron = "*/5 * * * *"
		sc.Job.Priority = 3
		rev, err := s.UpdateSchedule(ctx, sc)
		if err != nil || rev != before.Revision+1 {
			t.Fatalf("update: revision %d, %v; want %d", rev, err, before.Revision+1)
		}
		st := mustGetSchedule(t, ctx, s, "report")
		if !st.Mark.Equal(before.Mark) || !st.Paused || st.Fired != 1 || st.Cron != "*/5 * * * *" || st.Job.Priority != 3 ||
			!st.NextDue.IsZero() || !st.Updated.Equal(epoch.Add(time.Minute)) {
			t.Errorf("after update: %+v; want the mark %s kept, still paused, 1 fired, the new definition", st, before.Mark)
		}
		_, err = s.UpdateSchedule(ctx, minuteSchedule("nope"))
		if !errors.Is(err, headgate.ErrScheduleNotFound) {
			t.Errorf("update of an unknown schedule: %v, want ErrScheduleNotFound", err)
		}
	}},
	{"PutSchedule/ListPagesInNameOrder", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		for _, n := range []string{"c", "a", "b"} {
			mustAddSchedule(t, ctx, s, minuteSchedule(n))
		}
		page, next, err := s.ListSchedules(ctx, "", 2)
		if err != nil || len(page) != 2 || page[0].Name != "a" || page[1].Name != "b" || next != "b" {
			t.Fatalf("first page: %d schedules, next %q, %v", len(page), next, err)
		}
		page, next, err = s.ListSchedules(ctx, next, 2)
		if err != nil || len(page) != 1 || page[0].Name != "c" || next != "" {
			t.Errorf("second page: %d schedules, next %q, %v", len(page), next, err)
		}
	}},
	{"PutSchedule/NextTickIsTheFirstTickAfterTheMark", func(t *testing.T, s *headgate.Store) {
		// NextDue of a schedule no worker has looked at yet is the add itself; NextTick
		// is when its first tick fires, which is what an operator asks "next due" for.
		ctx := freeze(t, s)
		sc := minuteSchedule("nightly")
		sc.Cron, sc.Zone = "30 2 * * *", "Europe/Berlin"
		mustAddSchedule(t, ctx, s, sc)
		mustAddSchedule(t, ctx, s, headgate.Schedule{Name: "every", Interval: 90 * time.Second, Job: sc.Job})
		nightly := time.Date(2023, 11, 15, 1, 30, 0, 0, time.UTC) // 02:30 in Berlin (CET)
		if st := mustGetSchedule(t, ctx, s, "nightly"); !st.NextTick.Equal(nightly) || !st.NextDue.Equal(epoch) {
			t.Errorf("added: next tick %s, next due %s; want %s and the add's %s", st.NextTick, st.NextDue, nightly, epoch)
		}
		if st := mustGetSchedule(t, ctx, s, "every"); !st.NextTick.Equal(epoch.Add(90 * time.Second)) {
			t.Errorf("added interval: next tick %s, want %s", st.NextTick, epoch.Add(90*time.Second))
		}
		if _, err := s.PauseSchedule(ctx, "nightly"); err != nil {
			t.Fatal(err)
		}
		if st := mustGetSchedule(t, ctx, s, "nightly"); !st.NextTick.IsZero() {
			t.Errorf("paused: next tick %s, want none", st.NextTick)
		}
		advance(t, ctx, s, 24*time.Hour)
		if _, err := s.ResumeSchedule(ctx, "nightly"); err != nil {
			t.Fatal(err)
		}
		if st := mustGetSchedule(t, ctx, s, "nightly"); !st.NextTick.Equal(nightly.Add(24 * time.Hour)) {
			t.Errorf("resumed a day later: next tick %s, want %s (the pause's tick does not fire)", st.NextTick, nightly.Add(24*time.Hour))
		}
		// Once fired, the next tick is the one the cron duty waits for.
		advance(t, ctx, s, 3*time.Hour+17*time.Minute) // 20 s after the tick
		mustFire(t, ctx, s, cronFence(t, ctx, s, "a"), "nightly")
		if st := mustGetSchedule(t, ctx, s, "nightly"); st.Fired != 1 || !st.NextTick.Equal(nightly.Add(48*time.Hour)) ||
			!st.NextDue.Equal(st.NextTick) {
			t.Errorf("fired: %d fired, next tick %s, next due %s; want 1, both %s", st.Fired, st.NextTick, st.NextDue, nightly.Add(48*time.Hour))
		}
	}},
}

// scheduleValidationCases: each definition that does not hold together is refused with
// an *InvalidError naming the field, and nothing is written.
var scheduleValidationCases = []conformanceCase{
	{"Validation/Schedule", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAddSchedule(t, ctx, s, minuteSchedule("ok"))
		edit := func(f func(*headgate.Schedule)) headgate.Schedule {
			sc := minuteSchedule("bad")
			f(&sc)
			return sc
		}
		for _, c := range []struct {
			field string
			sc    headgate.Schedule
		}{
			{"Name", edit(func(sc *headgate.Schedule) { sc.Name = "" })},
			{"Name", edit(func(sc *headgate.Schedule) { sc.Name = "a{b}" })},
			{"Cron", edit(func(sc *headgate.Schedule) { sc.Cron = "" })},
			{"Cron", edit(func(sc *headgate.Schedule) { sc.Cron = "61 * * * *" })},
			{"Cron", edit(func(sc *headgate.Schedule) { sc.Cron = "* * * *" })},
			{"Cron", edit(func(sc *headgate.Schedule) { sc.Cron = "@every 5m" })},
			{"Cron", edit(func(sc *headgate.Schedule) { sc.Cron = "TZ=UTC * * * * *" })},
			{"Cron", edit(func(sc *headgate.Schedule) { sc.Interval = time.Minute })},
			{"Cron", edit(func(sc *headgate.Schedule) { sc.Cron = "0 0 30 2 *" })}, // no date matches: never fires
			{"Interval", edit(func(sc *headgate.Schedule) { sc.Cron, sc.Interval = "", 500*time.Millisecond })},
			{"Start", edit(func(sc *headgate.Schedule) { sc.Start = epoch })},
			{"Zone", edit(func(sc *headgate.Schedule) { sc.Zone = "Mars/Olympus" })},
			{"Zone", edit(func(sc *headgate.Schedule) { sc.Zone = "Local" })},
			{"Job.Kind", edit(func(sc *headgate.Schedule) { sc.Job.Kind = "" })},
			{"Job.ID", edit(func(sc *headgate.Schedule) { sc.Job.ID = "x" })},
			{"Job.ScheduledAt", edit(func(sc *headgate.Schedule) { sc.Job.ScheduledIn = time.Second })},
			{"Job.Pending", edit(func(sc *headgate.Schedule) { sc.Job.Pending = true })},
			{"Job.UniqueReplace", edit(func(sc *headgate.Schedule) {
				sc.Job.UniqueKey, sc.Job.UniqueDebounce = "k", time.Second
			})},
			{"Job.Queue", edit(func(sc *headgate.Schedule) { sc.Job.Queue = "a:b" })},
			{"Misfire.Policy", edit(func(sc *headgate.Schedule) { sc.Misfire.Policy = "later" })},
			{"Misfire.Grace", edit(func(sc *headgate.Schedule) { sc.Misfire.Grace = -time.Second })},
			{"Misfire.Max", edit(func(sc *headgate.Schedule) { sc.Misfire.Policy = headgate.MisfireCatchUp })},
			{"Misfire.Max", edit(func(sc *headgate.Schedule) { sc.Misfire.Max = 3 })},
			{"Misfire.Window", edit(func(sc *headgate.Schedule) {
				sc.Misfire = headgate.Misfire{Policy: headgate.MisfireCatchUp, Max: 3}
			})},
			// A missed tick is more than Grace late: a window within Grace catches up none.
			{"Misfire.Window", edit(func(sc *headgate.Schedule) {
				sc.Misfire = headgate.Misfire{Policy: headgate.MisfireCatchUp, Max: 3, Window: 30 * time.Second}
			})},
			{"Misfire.Window", edit(func(sc *headgate.Schedule) {
				sc.Misfire = headgate.Misfire{Policy: headgate.MisfireCatchUp, Max: 3, Window: time.Hour, Grace: time.Hour}
			})},
		} {
			for _, put := range []struct {
				verb string
				f    func(context.Context, headgate.Schedule) (int64, error)
			}{{"add", s.AddSchedule}, {"update", s.UpdateSchedule}} {
				err := unchanged(t, ctx, s, put.verb+" "+c.field, func() error { _, err := put.f(ctx, c.sc); return err })
				if inv := wantErr[*headgate.InvalidError](t, err); inv != nil && inv.Field != c.field {
					t.Errorf("%s %+v: refused for %s (%s), want %s", put.verb, c.sc, inv.Field, inv.Reason, c.field)
				}
			}
		}
		for verb, call := range map[string]func() error{
			"pause empty name":  func() error { _, err := s.PauseSchedule(ctx, ""); return err },
			"remove brace name": func() error { return s.RemoveSchedule(ctx, "{x}") },
			"list zero limit":   func() error { _, _, err := s.ListSchedules(ctx, "", 0); return err },
			"fire due no duty": func() error {
				_, _, err := s.FireDueSchedules(ctx, headgate.DutyFence{Holder: "h"}, 1)
				return err
			},
		} {
			wantErr[*headgate.InvalidError](t, unchanged(t, ctx, s, verb, call))
		}
	}},
}
