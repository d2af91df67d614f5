package headgate

import (
	"context"
	"fmt"
)

// CorruptError: a call was refused before writing anything because a structure of the
// namespace it needs is unusable (a key of the wrong type, a count that is not a number).
// Jobs whose own data is unusable do not cause it: scripts park them (CorruptJobs) and go
// on with the others.
type CorruptError struct {
	// Key is the Redis key that could not be used.
	Key string
	// Reason says why.
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("headgate: corrupt store data at %s: %s; nothing was written", e.Key, e.Reason)
}

// corruptScanPage is how many entries one HSCAN step of CorruptJobs asks for.
const corruptScanPage = 500

// CorruptJobs returns the jobs scripts parked because their stored data could not be
// used, job id -> reason. A parked job left every index it was found in (no admission,
// promotion or reclaim sees it again) and keeps its data for an operator to inspect; its
// queue's counts still count it in the state it had, since a corrupt hash may not say
// which queue and state that was.
func (s *Store) CorruptJobs(ctx context.Context) (map[string]string, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, s.keys.Corrupt(), cursor, "*", corruptScanPage).Result()
		if err != nil {
			return nil, fmt.Errorf("headgate: corrupt jobs: %w", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		if next == 0 {
			return out, nil
		}
		cursor = next
	}
}
