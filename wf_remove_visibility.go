package headgate

import "context"

// RemoveVisibility deletes a workflow's visibility row when it is runID's, and reports
// whether it did: a prune racing a newer run's upsert removes nothing.
func (s *Store) RemoveVisibility(ctx context.Context, workflowID, runID string) (bool, error) {
	if err := validateRequired("workflowID", workflowID, true); err != nil {
		return false, err
	}
	if err := validateRequired("runID", runID, true); err != nil {
		return false, err
	}
	reply, err := s.run(ctx, scriptWfRemoveVisibility, workflowID, workflowID, runID)
	if err != nil {
		return false, err
	}
	return asInt(reply, 0) == 1, nil
}
