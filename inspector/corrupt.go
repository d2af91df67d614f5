package inspector

import "context"

// CorruptJobs returns the jobs the store parked because their stored data could not be
// used (a wrong key type, an unparseable or impossible field), job id -> reason. They are
// out of every queue index and wait for an operator; Stats still counts them in the state
// they had.
func (i *Inspector) CorruptJobs(ctx context.Context) (map[string]string, error) {
	return i.store.CorruptJobs(ctx)
}
