package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/worker"
	"github.com/headgate/headgate/workflow"
)

type flowInput struct {
	ID string `json:"id"`
}

// measureWorkflows counts the bench workflow (three no-op steps, a 0 ms sleep before
// the third) through package workflow: n starts, then the drain, run by a worker that
// is never started (Work runs due tasks in this goroutine; the timers are fired here as
// the timers duty would), so only the workflows' own calls are counted.
func measureWorkflows(ctx context.Context, rdb *redis.Client, n int,
	measure func(name string, jobs int, f func() error) error) error {
	client, err := workflow.NewClient(rdb, &workflow.ClientConfig{Namespace: "cgwf"})
	if err != nil {
		return err
	}
	w, err := worker.New(rdb, &worker.Config{Namespace: "cgwf", ID: "cg", Concurrency: 50})
	if err != nil {
		return err
	}
	step := func(ctx workflow.Context, name string) error {
		_, err := workflow.Step(ctx, name, func(context.Context) (int, error) { return 0, nil }, nil)
		return err
	}
	workflow.Register(w, "cg_flow", func(ctx workflow.Context, in flowInput) (int, error) {
		for _, s := range []string{"one", "two"} {
			if err := step(ctx, s); err != nil {
				return 0, err
			}
		}
		if err := workflow.Sleep(ctx, "pause", 0); err != nil {
			return 0, err
		}
		return 3, step(ctx, "three")
	})
	start := func(i int) error {
		id := fmt.Sprintf("wf-%d", i)
		_, err := client.Start(ctx, "cg_flow", flowInput{ID: id}, workflow.StartOptions{ID: id})
		return err
	}
	if err := start(-1); err != nil { // warm-up: scripts loaded outside the counts
		return err
	}
	if err := measure("workflow start", n, func() error {
		for i := range n {
			if err := start(i); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	store := w.Store()
	return measure("workflow drain (tasks, timers)", n+1, func() error {
		for {
			fired, _, err := store.FireTimers(ctx, 1000)
			if err != nil {
				return err
			}
			attempts, err := w.Work(ctx, 50)
			if err != nil {
				return err
			}
			for _, a := range attempts {
				if a.Err != nil && !isSettled(a.Err) {
					return fmt.Errorf("task %s: %w", a.JobID, a.Err)
				}
			}
			if len(attempts) == 0 && fired == 0 {
				break
			}
		}
		for i := -1; i < n; i++ {
			run, err := store.GetWorkflow(ctx, fmt.Sprintf("wf-%d", i))
			if err != nil {
				return err
			}
			if !run.Status.Closed() {
				return fmt.Errorf("workflow wf-%d is %s after the drain", i, run.Status)
			}
		}
		return nil
	})
}

func isSettled(err error) bool {
	var s *worker.SettledError
	return errors.As(err, &s)
}
