package headgate

import (
	"context"
	"time"
)

// WriteOutput stores the running job's output; only the holder may. It fails with a
// *CorruptError, writing nothing, when the job's stored data or output key is corrupt.
func (s *Store) WriteOutput(ctx context.Context, lease LeaseRef, out Blob) (StoredBlob, error) {
	if err := validateLease(lease); err != nil {
		return StoredBlob{}, err
	}
	if err := validateBlob("output", &out); err != nil {
		return StoredBlob{}, err
	}
	reply, err := s.run(ctx, scriptWriteOutput, lease.JobID, lease.JobID, lease.LeaseID, lease.Fence,
		out.SchemaVersion, out.Bytes)
	if err != nil {
		return StoredBlob{}, err
	}
	return StoredBlob{Blob: out, Fence: lease.Fence, UpdatedAt: time.UnixMilli(asInt(reply, 0))}, nil
}
