package worker

import (
	"fmt"

	"github.com/headgate/headgate"
)

// ExpandQueues replaces each of the worker's configured queues q by expand(q), in
// order, so that the queues a queue expands to keep its place in the serving order.
// It is how the workflow package adds the task queues of the package versions a worker
// serves (see workflow.ServeVersions). It panics, like Handle, after the worker started,
// on a second call, or when expand returns an invalid queue name or no queue at all.
func ExpandQueues(w *Worker, expand func(queue string) []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic("worker: ExpandQueues called after the worker started")
	}
	if w.queuesExpanded {
		panic("worker: ExpandQueues called twice")
	}
	var out []string
	for _, q := range w.cfg.Queues {
		for _, x := range expand(q) {
			if err := headgate.ValidateQueueName(fmt.Sprintf("expanded queue of %q", q), x); err != nil {
				panic(fmt.Sprintf("worker: ExpandQueues: %v", err))
			}
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		panic("worker: ExpandQueues left the worker no queue")
	}
	w.cfg.Queues, w.queuesExpanded = out, true
}
