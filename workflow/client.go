package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/headgate/headgate"
	"github.com/redis/go-redis/v9"
)

// Client starts workflows, signals and cancels them, and waits for their outcomes.
type Client struct {
	store *headgate.Store
}

// ClientConfig configures a Client.
type ClientConfig struct {
	// Namespace is the namespace of the workflows (and of the workers that run them).
	// Required.
	Namespace string
}

// NewClient returns a client of cfg.Namespace on rdb.
func NewClient(rdb redis.UniversalClient, cfg *ClientConfig) (*Client, error) {
	if cfg == nil {
		cfg = &ClientConfig{}
	}
	s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: cfg.Namespace})
	if err != nil {
		return nil, err
	}
	return &Client{store: s}, nil
}

// NewClientFromStore returns a client over an existing store.
func NewClientFromStore(s *headgate.Store) *Client { return &Client{store: s} }

// Store returns the store the client works on (for the inspector's reads: GetWorkflow,
// ReadHistory, ListActive, ListPaused, Query).
func (c *Client) Store() *headgate.Store { return c.store }

// StartOptions say where a run goes.
type StartOptions struct {
	// ID is the workflow id. Required: starting an id that exists returns its run and
	// starts nothing, so a retried Start is safe.
	ID string
	// Queue is the queue its tasks (and its children's) go to. Defaults to the default
	// queue.
	Queue string
	// Partition is the fairness partition (tenant) of its tasks.
	Partition string
	// Version pins the run to a package version: only workers that serve it
	// (ServeVersions) run its tasks, and its children inherit it. Empty: the version the
	// workflow type's package route names (Store.PutPackageRoute), and without a route
	// the run is unversioned. Start refuses a version that is draining with
	// *headgate.VersionDrainingError.
	Version string
}

// Run is a started (or existing) run.
type Run struct {
	ID    string
	RunID string
	// Started is false when the id existed: Start did nothing.
	Started bool
	Status  headgate.WorkflowStatus
}

// Start starts a run of workflowType with input in (encoded as JSON) under opts.ID, or
// returns the existing run of that id.
func (c *Client) Start(ctx context.Context, workflowType string, in any, opts StartOptions) (*Run, error) {
	if err := checkName("workflowType", workflowType); err != nil {
		return nil, err
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("workflow: encode the input: %w", err)
	}
	r, err := c.store.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: opts.ID, WorkflowType: workflowType,
		Input: input, PackageVersion: opts.Version, Queue: opts.Queue, Partition: opts.Partition})
	if err != nil {
		return nil, err
	}
	return &Run{ID: opts.ID, RunID: r.RunID, Started: r.Started, Status: r.Status}, nil
}

// Signal sends a signal to the workflow's open run, payload encoded as JSON; Await
// receives it. A signal sent before the code awaits it is kept until it does. A name
// Await refuses ('/', '#', '[' or ']' in it, or longer than 200 bytes) is refused with
// an *headgate.InvalidError, and nothing is sent.
func (c *Client) Signal(ctx context.Context, id, name string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("workflow: encode the signal: %w", err)
	}
	return c.store.SignalWorkflow(ctx, id, name, b)
}

// Cancel asks the workflow's open run to stop (see ErrCancelled). A run that closes
// cancelled cancels the children it started that have not ended. A repeat while the
// run's cancel request is pending changes nothing.
func (c *Client) Cancel(ctx context.Context, id, reason string) error {
	_, err := c.store.CancelWorkflow(ctx, id, reason, "")
	return err
}

// Result waits, without polling, until the workflow's run ends (the last of its chain,
// after any continue-as-new) and returns its result decoded from JSON, or a
// *FailedError when it failed, was cancelled (errors.Is ErrCancelled) or terminated; its
// Message is the run's error, or for a run that ended with ErrCancelled itself the
// cancel's reason, and for a terminated run the terminate's reason.
func Result[T any](ctx context.Context, c *Client, id string) (T, error) {
	var zero T
	row, err := c.store.WaitWorkflowClosed(ctx, id)
	if err != nil {
		return zero, err
	}
	// The closing event is the run's last workflow_* event: events that waited in the
	// inbox may follow it.
	history, err := c.store.ReadHistory(ctx, id)
	if err != nil {
		return zero, err
	}
	var e headgate.Event
	cancelReason := "" // the first cancel request's reason in the run
	for _, h := range history {
		if h.Seq < row.RunStartSeq {
			continue
		}
		if headgate.StatusFromEvents([]headgate.Event{h}).Closed() {
			e = h
		}
		if h.Kind == headgate.EventWorkflowCancelRequested && cancelReason == "" {
			cancelReason = h.Reason
		}
	}
	if row.Status != headgate.WorkflowCompleted {
		msg := e.Reason
		if e.Error != nil {
			msg = e.Error.Message
		}
		if row.Status == headgate.WorkflowCancelled && cancelReason != "" && msg == ErrCancelled.Error() {
			msg = cancelReason // the code gave up as asked: the operator's reason says why
		}
		return zero, &FailedError{WorkflowID: id, Status: string(row.Status), Message: msg}
	}
	var v T
	if err := json.Unmarshal(e.Result, &v); err != nil {
		return zero, fmt.Errorf("workflow %q: decode the result: %w", id, err)
	}
	return v, nil
}

// Pause pauses the workflow's open run: its tasks are not admitted until Resume, and
// Store.ListPaused lists it. A task running at the time finishes first.
func (c *Client) Pause(ctx context.Context, id, reason string) (headgate.WorkflowPauseResult, error) {
	return c.store.PauseWorkflow(ctx, id, reason, "")
}

// Resume resumes a paused run.
func (c *Client) Resume(ctx context.Context, id, reason string) (headgate.WorkflowPauseResult, error) {
	return c.store.ResumeWorkflow(ctx, id, reason, "")
}

// Terminate ends the workflow's open run at once without running its code.
func (c *Client) Terminate(ctx context.Context, id, reason string) error {
	return c.store.TerminateWorkflow(ctx, id, reason, "")
}

// Retry retries a failed run from its last good point (see Store.RetryWorkflow).
func (c *Client) Retry(ctx context.Context, id string) error {
	_, err := c.store.RetryWorkflow(ctx, id)
	return err
}
