package headgate

import (
	"context"
	"time"
)

// AddSchedule adds a schedule to the namespace. Its first tick is the first one after
// the store's now; a worker of the namespace fires it (see worker.DutyCron). It returns
// *InvalidError for a definition that does not hold together and *ScheduleExistsError
// for a name the namespace has; then nothing was written.
func (s *Store) AddSchedule(ctx context.Context, sc Schedule) (int64, error) {
	return s.putSchedule(ctx, sc, "add")
}

// UpdateSchedule replaces the definition of a schedule, keeping its mark, its pause and
// its counters: ticks after the last one dealt with fire under the new definition. It
// returns the new revision, *InvalidError, or ErrScheduleNotFound.
func (s *Store) UpdateSchedule(ctx context.Context, sc Schedule) (int64, error) {
	return s.putSchedule(ctx, sc, "update")
}

func (s *Store) putSchedule(ctx context.Context, sc Schedule, mode string) (int64, error) {
	sc, k, err := normalizeSchedule(sc)
	if err != nil {
		return 0, err
	}
	if err := checkScheduleFires(sc, k); err != nil {
		return 0, err
	}
	def, err := encodeScheduleDef(sc)
	if err != nil {
		return 0, err
	}
	reply, err := s.run(ctx, scriptPutSchedule, sc.Name, sc.Name, def, mode)
	if err != nil {
		return 0, err
	}
	s.markFormat(ctx) // a schedule, whose ticks enqueue jobs, is the namespace's data too
	return asInt(reply, 0), nil
}

// checkScheduleFires refuses a definition that parses but could never enqueue a job: an
// expression no date matches (February 30th), or a catch-up window no missed tick can be
// in (a tick is missed once it is more than Grace late, so the window must reach further
// back than Grace). Such a schedule would be stored and listed and never fire. Only a
// put checks this, so a definition stored before stays readable.
func checkScheduleFires(sc Schedule, k *ticker) error {
	// The calendar repeats within the five years the parser searches from any date.
	if k.spec != nil && k.next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return invalid("Cron", "%q matches no date: the schedule would never fire", sc.Cron)
	}
	if m := sc.Misfire; m.Policy == MisfireCatchUp && m.Window <= m.Grace {
		return invalid("Misfire.Window", "is %s, not more than Misfire.Grace (%s): a tick is missed only once it is more than Grace late, so no missed tick is ever in the window", m.Window, m.Grace)
	}
	return nil
}
