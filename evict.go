package headgate

import (
	"context"
)

// EvictRetained deletes up to limit terminal jobs whose retention lapsed (quarantined
// jobs are exempt) and forgets up to limit ended throttle windows.
func (s *Store) EvictRetained(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, invalid("limit", "must be positive")
	}
	reply, err := s.run(ctx, scriptEvict, "", limit)
	if err != nil {
		return 0, err
	}
	return int(asInt(reply, 0)), nil
}
