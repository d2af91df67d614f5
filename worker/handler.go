package worker

import (
	"context"
	"fmt"
	"reflect"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/msgpackcheck"
	"github.com/vmihailenco/msgpack/v5"
)

// Args are a job's typed arguments. Kind names the handler that runs them; it is called
// on the zero value of the type (a new value for pointer types), so it must not depend on
// the fields. The payload of a job is msgpack.Marshal(args), as the rqueue client
// writes it.
type Args interface {
	Kind() string
}

// Job is one attempt of a job with decoded arguments, as a handler registered with
// Handle sees it.
type Job[T Args] struct {
	// Args are the job's arguments, decoded from its payload.
	Args T

	ID   string
	Kind string
	// Attempt counts this job's earlier attempts that failed (ended in a retry): 0 on
	// the first attempt. The attempt's number, as the worker's log lines, the job's
	// history, the CLI and the dashboard show it, is 1-based: Attempt+1.
	Attempt int
	// CrashAttempt counts this job's earlier attempts lost to an expired lease.
	CrashAttempt int
	// Snoozes counts this job's earlier attempts that snoozed; past the namespace
	// policy's snooze limit a snooze counts as a failed attempt.
	Snoozes   int
	Queue     string
	Partition string
	// Fence is this admission's fence: it increases with every admission of the job and
	// tags what this attempt writes (output, progress, result).
	Fence int64
	// Envelope is the job as stored, payload included.
	Envelope headgate.Envelope
}

// maxArgsDepth is how deep a job's args may nest.
const maxArgsDepth = 1000

// HandlerFunc runs one attempt of a job given as the store's claim, payload undecoded.
type HandlerFunc func(ctx context.Context, claim *headgate.Claim) error

// Handle registers fn as the handler of T's kind, wrapped in mw (outermost first,
// inside the worker's Config.Middleware; see Middleware). It panics when fn is nil, when
// the kind is empty or already has a handler, when a middleware is nil, or when w has
// started: handlers are registered before Start or Run.
//
// A payload that does not decode into T parks the job as undecodable with the decode
// error; the handler is not called.
func Handle[T Args](w *Worker, fn func(ctx context.Context, job *Job[T]) error, mw ...Middleware) {
	kind := kindOf[T]()
	if fn == nil {
		w.register(kind, nil, mw) // refused there, as HandleFunc's
	}
	w.register(kind, func(ctx context.Context, c *headgate.Claim) error {
		var args T
		// A header declaring more elements than the payload holds would make the decoder
		// allocate them first and take the whole process down: check the shape first.
		if err := msgpackcheck.Check(c.Envelope.Payload, maxArgsDepth); err != nil {
			return &errUndecodable{msg: fmt.Sprintf("decode args for kind %q: %v", kind, err)}
		}
		if err := msgpack.Unmarshal(c.Envelope.Payload, &args); err != nil {
			return &errUndecodable{msg: fmt.Sprintf("decode args for kind %q: %v", kind, err)}
		}
		e := &c.Envelope
		return fn(ctx, &Job[T]{
			Args:         args,
			ID:           e.ID,
			Kind:         e.Kind,
			Attempt:      e.Attempt,
			CrashAttempt: e.CrashAttempt,
			Snoozes:      e.Snoozes,
			Queue:        e.Queue,
			Partition:    e.PartitionKey,
			Fence:        c.Fence,
			Envelope:     *e,
		})
	}, mw)
}

// HandleFunc registers fn as the handler of kind, for jobs whose payload the handler
// decodes itself, wrapped in mw as Handle does. It panics like Handle.
func HandleFunc(w *Worker, kind string, fn HandlerFunc, mw ...Middleware) {
	w.register(kind, fn, mw)
}

// kindOf returns the kind of T, calling Kind on a fresh value for pointer types so that
// a Kind method that reads its receiver does not dereference nil.
func kindOf[T Args]() string {
	var zero T
	if t := reflect.TypeFor[T](); t.Kind() == reflect.Pointer {
		zero = reflect.New(t.Elem()).Interface().(T)
	}
	return zero.Kind()
}

func (w *Worker) register(kind string, fn HandlerFunc, mw []Middleware) {
	if kind == "" {
		panic("worker: cannot register a handler for an empty kind")
	}
	if fn == nil {
		panic(fmt.Sprintf("worker: nil handler for kind %q", kind))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic(fmt.Sprintf("worker: handler for kind %q registered after the worker started", kind))
	}
	if _, dup := w.handlers[kind]; dup {
		panic(fmt.Sprintf("worker: kind %q already has a handler", kind))
	}
	w.handlers[kind] = w.wrap(kind, fn, mw)
}
