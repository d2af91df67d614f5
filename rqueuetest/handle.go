package rqueuetest

import (
	"context"
	"reflect"
	"slices"

	"github.com/headgate/headgate/worker"
)

// handler is a handler registered on a kit; register adds it to a worker.
type handler struct {
	kind     string
	register func(w *worker.Worker)
}

// Handle registers fn as the kit's handler of T's kind, as worker.Handle does on a
// worker: Drain and the workers NewWorker makes from then on run it. A nil fn, an empty
// kind or one already handled fails the test.
//
// The handler runs in a real worker, so its context carries what production gives it:
// worker.SetResult, worker.Step, worker.Log, worker.WriteOutput and
// worker.WriteProgress work, and its return value is acked through the worker's own
// outcome mapping. Drain runs it on the goroutine that called Drain.
func Handle[T worker.Args](k *Kit, fn func(ctx context.Context, job *worker.Job[T]) error) {
	k.fail.Helper()
	k.addHandler(kindOf[T](), fn == nil, func(w *worker.Worker) { worker.Handle(w, fn) })
}

// HandleFunc registers fn as the kit's handler of kind, for handlers that decode the
// payload themselves, as worker.HandleFunc does. It fails the test like Handle.
func HandleFunc(k *Kit, kind string, fn worker.HandlerFunc) {
	k.fail.Helper()
	k.addHandler(kind, fn == nil, func(w *worker.Worker) { worker.HandleFunc(w, kind, fn) })
}

func (k *Kit) addHandler(kind string, nilFn bool, register func(*worker.Worker)) {
	k.fail.Helper()
	if kind == "" {
		fatalf(k.fail, "rqueuetest: cannot register a handler for an empty kind")
	}
	if nilFn {
		fatalf(k.fail, "rqueuetest: nil handler for kind %q", kind)
	}
	k.mu.Lock()
	dup := slices.ContainsFunc(k.handlers, func(h handler) bool { return h.kind == kind })
	if !dup {
		k.handlers = append(k.handlers, handler{kind: kind, register: register})
	}
	k.mu.Unlock()
	if dup {
		fatalf(k.fail, "rqueuetest: kind %q already has a handler on this kit", kind)
	}
}

// kindOf returns the kind of T, calling Kind on a fresh value for pointer types (as the
// worker does), so that a Kind method that reads its receiver does not dereference nil.
func kindOf[T worker.Args]() string {
	var zero T
	if t := reflect.TypeFor[T](); t.Kind() == reflect.Pointer {
		zero = reflect.New(t.Elem()).Interface().(T)
	}
	return zero.Kind()
}
