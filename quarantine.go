package headgate

import (
	"cmp"
	"context"
	"slices"

	"github.com/redis/go-redis/v9"
)

// QuarantinedFingerprint is a fingerprint blocked after a job crashed into the limit.
type QuarantinedFingerprint struct {
	Fingerprint string
	JobID       string // the job that reached the crash limit
	Held        int64  // available siblings set aside until release (by admission, when it reaches them)
}

// Quarantined lists the quarantined fingerprints.
func (s *Store) Quarantined(ctx context.Context) ([]QuarantinedFingerprint, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	h, err := s.rdb.HGetAll(ctx, s.keys.Quarantine()).Result()
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	held := make(map[string]*redis.IntCmd, len(h))
	for fp := range h {
		held[fp] = pipe.SCard(ctx, s.keys.Held(fp))
	}
	if len(h) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]QuarantinedFingerprint, 0, len(h))
	for fp, id := range h {
		out = append(out, QuarantinedFingerprint{Fingerprint: fp, JobID: id, Held: held[fp].Val()})
	}
	slices.SortFunc(out, func(a, b QuarantinedFingerprint) int { return cmp.Compare(a.Fingerprint, b.Fingerprint) })
	return out, nil
}
