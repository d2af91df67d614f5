package headgate

import (
	"context"
	"time"
)

// Progress is a running job's progress report.
type Progress struct {
	Current   int64
	Total     int64 // 0 = unknown
	Message   string
	Fence     int64     // set by the store
	UpdatedAt time.Time // set by the store
}

// WriteProgress stores the running job's progress; only the holder may. It fails with a
// *CorruptError, writing nothing, when the job's stored data or progress key is corrupt.
func (s *Store) WriteProgress(ctx context.Context, lease LeaseRef, p Progress) (Progress, error) {
	if err := validateLease(lease); err != nil {
		return Progress{}, err
	}
	switch {
	case p.Current < 0 || p.Total < 0:
		return Progress{}, invalid("progress", "current and total cannot be negative (%d/%d)", p.Current, p.Total)
	case p.Total > 0 && p.Current > p.Total:
		return Progress{}, invalid("progress.Current", "%d is more than total %d", p.Current, p.Total)
	case len(p.Message) > MaxMessageBytes:
		return Progress{}, invalid("progress.Message", "is %d bytes, more than %d", len(p.Message), MaxMessageBytes)
	}
	reply, err := s.run(ctx, scriptWriteProgress, lease.JobID, lease.JobID, lease.LeaseID, lease.Fence,
		p.Current, p.Total, p.Message)
	if err != nil {
		return Progress{}, err
	}
	p.Fence, p.UpdatedAt = lease.Fence, time.UnixMilli(asInt(reply, 0))
	return p, nil
}
