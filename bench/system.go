package main

import (
	"context"
	"fmt"
	"sort"
)

// System is one queue implementation under test. The harness hands it one
// scenario at a time on a freshly flushed Redis and reads back its metrics.
//
// Go libraries do not implement System directly: they implement Queue (below)
// and register through registerGo, so every Go library runs the very same
// scenario code (gosystem.go). System exists for peers that live in another
// runtime, such as BullMQ, whose scenario loop has to run next to its client
// (bullmq.go and bullmq/bench.mjs).
type System interface {
	Name() string
	// Available returns nil when the system can run here, or an error whose
	// text says why not and what to do; the harness prints it and moves on.
	Available() error
	// Run executes one scenario against the Redis server at sc.Params.Redis.
	Run(ctx context.Context, sc Scenario) (Result, error)
}

// Job is one benchmark job as a Go library sees it.
type Job struct {
	// Tenant is the fairness key. "" means the library's default.
	// A library with partitions (headgate's partition_key) must map Tenant
	// onto them; a library without them ignores it.
	Tenant string
	// Payload is opaque to the library and must reach the handler unchanged:
	// the harness keeps the enqueue timestamp in it.
	Payload []byte
}

// Handler is called once per delivered job, on the library's worker goroutine.
// It is a no-op apart from the harness's own bookkeeping and never fails.
type Handler func(payload []byte)

// Queue is what a Go job-queue library implements to take part. One Queue is
// opened per scenario run (after FLUSHALL) and closed at the end of it.
//
// Job settings are the same for every library: one job kind, default retry
// policy, and completed jobs are NOT kept (deleted on success).
type Queue interface {
	// Enqueue adds one job with one round trip's worth of API: the
	// library's ordinary single-job call. It is called from many goroutines.
	Enqueue(ctx context.Context, j Job) error
	// StartWorker starts processing with the given concurrency, calling h for
	// every job, and returns as soon as the worker runs. The clock of the
	// throughput scenarios starts just before this call.
	StartWorker(ctx context.Context, concurrency int, h Handler) (Worker, error)
	// Close releases the library's connections.
	Close() error
}

// BatchEnqueuer is optional: a Queue that can add many jobs in one call
// implements it, and the harness uses it for enqueue-batch and for pre-loading
// backlogs. Without it the harness falls back to concurrent single Enqueue
// calls and says so in the table's note column.
type BatchEnqueuer interface {
	EnqueueBatch(ctx context.Context, jobs []Job) error
}

// bulkBatchEnqueuer is optional: a Queue with a second, faster batch path
// for bulk loads (River's InsertManyFast, which is COPY FROM) implements it.
// enqueue-batch then also times that path (its own table row), and
// pre-loading backlogs uses it.
type bulkBatchEnqueuer interface {
	EnqueueBulk(ctx context.Context, jobs []Job) error
}

// storedBytesCounter is optional: a Queue whose jobs are not in the
// harness's Redis reports how many bytes its store holds, for the memory
// scenario, and says in StoredBytesNote what that count is.
type storedBytesCounter interface {
	StoredBytes(ctx context.Context) (int64, error)
	StoredBytesNote() string
}

// rowNoter is optional: a Queue that runs a scenario with settings of its
// own says so in the note column, per metric key of the scenario's rows.
type rowNoter interface {
	RowNotes(k Kind) map[string]string
}

// setupSystem is a System that needs a store of its own started before its
// first run (River: a PostgreSQL cluster). Setup returns a line for the
// table's footer and the func that stops the store again; an error makes
// the harness skip the system with that reason.
type setupSystem interface {
	Setup(ctx context.Context) (env string, stop func(), err error)
}

// Worker is a running worker started by Queue.StartWorker.
type Worker interface {
	// Stop stops fetching, waits for in-flight handlers and returns. After
	// Stop returns the worker must issue no more Redis commands, since the
	// harness flushes the server next.
	Stop() error
}

// Opener connects a Go library to the Redis server at addr (host:port).
type Opener func(ctx context.Context, addr string) (Queue, error)

var registry = map[string]System{}

// order is the column order of the table; headgate first so that its ratio
// columns read against the peers that follow.
var order = []string{"headgate", "asynq", "bullmq", "river", "go-workflows"}

func register(s System) {
	if _, dup := registry[s.Name()]; dup {
		panic(fmt.Sprintf("bench: system %q registered twice", s.Name()))
	}
	registry[s.Name()] = s
}

// registerGo registers a Go library under name; call it from an init func in
// the library's file (see asynq.go).
func registerGo(name string, open Opener) {
	register(&goSystem{name: name, open: open})
}

// registeredNames lists systems in column order, unknown names last.
func registeredNames() []string {
	rank := map[string]int{}
	for i, n := range order {
		rank[n] = i
	}
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, iok := rank[names[i]]
		rj, jok := rank[names[j]]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		default:
			return names[i] < names[j]
		}
	})
	return names
}
