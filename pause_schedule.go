package headgate

import (
	"context"
)

// PauseSchedule stops a schedule's ticks from firing until ResumeSchedule; false when it
// was paused already. It returns ErrScheduleNotFound for a name the namespace lacks.
func (s *Store) PauseSchedule(ctx context.Context, name string) (bool, error) {
	return s.pauseSchedule(ctx, name, 1)
}

// ResumeSchedule lets a paused schedule fire again, from its next tick after the store's
// now: ticks that fell in the pause never fire. False when it was not paused.
func (s *Store) ResumeSchedule(ctx context.Context, name string) (bool, error) {
	return s.pauseSchedule(ctx, name, 0)
}

func (s *Store) pauseSchedule(ctx context.Context, name string, pause int) (bool, error) {
	if err := validateRequired("name", name, true); err != nil {
		return false, err
	}
	reply, err := s.run(ctx, scriptPauseSchedule, name, name, pause)
	if err != nil {
		return false, err
	}
	return asInt(reply, 0) == 1, nil
}
