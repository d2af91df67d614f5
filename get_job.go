package headgate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// GetJob returns the stored job, or ErrJobNotFound.
func (s *Store) GetJob(ctx context.Context, id string) (*Job, error) {
	pipe := s.rdb.Pipeline()
	h := pipe.HGetAll(ctx, s.keys.Job(id))
	exp := pipe.ZScore(ctx, s.keys.Leases(), id)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	if len(h.Val()) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	return withLease(jobFromHash(id, h.Val()), exp), nil
}

// JobErrors returns the job's error and attempt-log history, oldest first.
func (s *Store) JobErrors(ctx context.Context, id string) ([]string, error) {
	return s.rdb.LRange(ctx, s.keys.Errors(id), 0, -1).Result()
}

// JobResult returns a completed job's result, or nil when it has none.
func (s *Store) JobResult(ctx context.Context, id string) (*StoredBlob, error) {
	return s.getBlob(ctx, s.keys.Result(id))
}

// JobOutput returns the job's latest output, or nil when it has none.
func (s *Store) JobOutput(ctx context.Context, id string) (*StoredBlob, error) {
	return s.getBlob(ctx, s.keys.Output(id))
}

func (s *Store) getBlob(ctx context.Context, key string) (*StoredBlob, error) {
	h, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil || len(h) == 0 {
		return nil, err
	}
	return &StoredBlob{
		Blob:      Blob{SchemaVersion: atoi(h["schema"]), Bytes: []byte(h["bytes"])},
		Fence:     int64(atoi(h["fence"])),
		UpdatedAt: time.UnixMilli(int64(atoi(h["at"]))),
	}, nil
}

// JobProgress returns the job's latest progress, or nil when it has none.
func (s *Store) JobProgress(ctx context.Context, id string) (*Progress, error) {
	h, err := s.rdb.HGetAll(ctx, s.keys.Progress(id)).Result()
	if err != nil || len(h) == 0 {
		return nil, err
	}
	return &Progress{
		Current: int64(atoi(h["current"])), Total: int64(atoi(h["total"])), Message: h["message"],
		Fence: int64(atoi(h["fence"])), UpdatedAt: time.UnixMilli(int64(atoi(h["at"]))),
	}, nil
}

// withLease sets a running job's lease expiry from its entry in the leases ZSET.
func withLease(j *Job, exp *redis.FloatCmd) *Job {
	if v, err := exp.Result(); err == nil && j.State == StateRunning {
		j.LeaseExpiresAt = time.UnixMilli(int64(v))
	}
	return j
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
