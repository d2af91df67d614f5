package headgate

import (
	"context"
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
	sc, _, err := normalizeSchedule(sc)
	if err != nil {
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
