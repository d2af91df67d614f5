package headgate

import (
	"context"
	"strconv"
)

// PutWorkloop stores a workloop, replacing a prior record of its id.
func (s *Store) PutWorkloop(ctx context.Context, r WorkloopRecord) error {
	if err := validateRequired("LoopID", r.LoopID, true); err != nil {
		return err
	}
	if len(r.Spec) > MaxPayloadBytes {
		return invalid("Spec", "is %d bytes, more than the %d byte limit", len(r.Spec), MaxPayloadBytes)
	}
	next := ""
	if !r.NextCheckAt.IsZero() {
		if r.NextCheckAt.UnixMilli() < 0 {
			return invalid("NextCheckAt", "is before 1970")
		}
		next = strconv.FormatInt(r.NextCheckAt.UnixMilli(), 10)
	}
	row, err := encodeWorkloop(r)
	if err != nil {
		return err
	}
	_, err = s.run(ctx, scriptWfPutWorkloop, r.LoopID, r.LoopID, row, next)
	return err
}

// WriteRawWorkloop stores bytes as a workloop's row, bypassing its encoding, for tests
// of poisoned rows. The row is due when its bytes carry a next check time that decodes;
// otherwise it is never due, but listed.
func (s *Store) WriteRawWorkloop(ctx context.Context, loopID string, raw []byte) error {
	if err := validateRequired("loopID", loopID, true); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptWfPutWorkloop, loopID, loopID, raw, probeNextCheck(raw))
	return err
}
