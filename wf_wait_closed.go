package headgate

import (
	"context"
	"fmt"
)

// WaitWorkflowClosed blocks until the workflow's run closes (completed, failed,
// cancelled or terminated; a continue-as-new is not an end: the chain goes on) and
// returns its row, or until ctx is done. It does not poll: it subscribes to the channel
// the closing commit publishes on, then reads the row, so a close between the two is
// not missed. An id without a history is ErrWorkflowNotFound.
func (s *Store) WaitWorkflowClosed(ctx context.Context, workflowID string) (*WorkflowSummary, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	if err := validateRequired("workflowID", workflowID, true); err != nil {
		return nil, err
	}
	sub := s.rdb.Subscribe(ctx, s.keys.WorkflowClosed(workflowID))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription is confirmed
		return nil, fmt.Errorf("headgate: subscribe to workflow %q: %w", workflowID, err)
	}
	ch := sub.Channel()
	for {
		w, err := s.GetWorkflow(ctx, workflowID)
		if err != nil {
			return nil, err
		}
		if w.Status.Closed() && w.Status != WorkflowContinuedAsNew {
			return w, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}
