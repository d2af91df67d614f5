package headgate

import (
	"context"
)

// ReleaseQuarantine lifts a fingerprint's quarantine: enqueues with it are accepted again
// and its held siblings return to admission. It returns how many siblings it released.
// The quarantined job itself stays quarantined for the operator to inspect. A held job
// whose stored data is corrupt is parked (CorruptJobs) and counts as released; a corrupt
// structure the release would write fails it with a *CorruptError before anything of
// that batch is written.
func (s *Store) ReleaseQuarantine(ctx context.Context, fingerprint string) (int, error) {
	if err := validateRequired("fingerprint", fingerprint, true); err != nil {
		return 0, err
	}
	const batch = 500
	total := 0
	for {
		reply, err := s.run(ctx, scriptReleaseQuarantine, "", fingerprint, batch)
		if err != nil {
			return total, err
		}
		total += int(asInt(reply, 0))
		if asInt(reply, 1) == 0 {
			return total, nil
		}
	}
}
