package headgate

import (
	"context"
)

// RemoveSchedule removes a schedule; the jobs it enqueued stay. It returns
// ErrScheduleNotFound for a name the namespace lacks.
func (s *Store) RemoveSchedule(ctx context.Context, name string) error {
	if err := validateRequired("name", name, true); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptRemoveSchedule, name, name)
	return err
}
