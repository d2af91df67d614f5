package rqueue

import (
	"context"
	"errors"

	"github.com/headgate/headgate"
)

// EnqueueFunc stores a batch of jobs, all or nothing, as Store.Enqueue does: the
// results are in the order of envs.
type EnqueueFunc func(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error)

// EnqueueMiddleware wraps the client's sending of jobs to the store: it gets the next
// EnqueueFunc of the chain and returns the one to call instead. It sees every batch that
// Enqueue (a batch of one) and EnqueueMany send, after the client built and checked the
// envelopes from args and options, and may change them in place before calling next
// (add tags, write trace context), observe the results or the error, or refuse the
// batch by returning an error without calling next. Config.EnqueueMiddleware[0] is
// outermost. What it changes in the envelopes is what the store validates and writes,
// and what the client's results describe. It must be safe for concurrent use.
type EnqueueMiddleware func(next EnqueueFunc) EnqueueFunc

// sender builds the client's chain: the middleware around the store's enqueue.
func (c *Client) sender() EnqueueFunc {
	store := func(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error) {
		res, err := c.store.Enqueue(ctx, envs...)
		var nd *headgate.NotDurableError
		if errors.As(err, &nd) {
			c.cfg.Logger.Warn("enqueue written but not confirmed by enough replicas: the jobs may not survive a failover",
				"namespace", c.cfg.Namespace, "jobs", len(envs), "first_job_id", envs[0].ID,
				"replicas", nd.Replicas, "wanted", nd.Wanted)
		}
		return res, err
	}
	// Single jobs, whatever call sent them, share script calls with concurrent ones;
	// the middleware still sees each job's own batch of one.
	c.singles = &coalescer{send: store}
	send := func(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error) {
		if len(envs) != 1 {
			return store(ctx, envs)
		}
		res, err := c.singles.enqueue(ctx, envs)
		if err != nil && !notDurable(err) {
			return nil, err
		}
		return res, err
	}
	for i := len(c.cfg.EnqueueMiddleware) - 1; i >= 0; i-- {
		send = c.cfg.EnqueueMiddleware[i](send)
	}
	return send
}

// Written reports which jobs of a batch an EnqueueFunc call wrote, for middleware that
// counts enqueues: the index of each one that was neither a replay nor a duplicate,
// none when err says the batch was refused. A NotDurableError comes with results: its
// jobs were written.
func Written(envs []headgate.Envelope, res []headgate.EnqueueResult, err error) []int {
	var nd *headgate.NotDurableError
	if err != nil && !errors.As(err, &nd) {
		return nil
	}
	var out []int
	for i, r := range res {
		if i < len(envs) && !r.Replayed {
			out = append(out, i)
		}
	}
	return out
}
