package headgate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// StorageFormat is the version of the layout this build reads and writes a namespace's
// keys in: key names, job hash fields and their encodings, ids, partition ranks. A
// namespace records the format it was written in (keys.Format); a store that finds
// another refuses the namespace with *FormatError rather than misread its jobs. A change
// to the layout that an older build would misread takes the next number.
const StorageFormat = "1"

// FormatError: the namespace was written in a storage format this build does not read.
// Nothing was read or written besides the marker itself. Drain the namespace with a build
// of the format it names, or start a new namespace (see the README's upgrade note).
type FormatError struct {
	Namespace string
	// Found is the namespace's recorded format; Want is this build's (StorageFormat).
	Found, Want string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("headgate: namespace %q is stored in format %q; this build reads format %q: drain the namespace "+
		"with a build of format %q, or use a new namespace", e.Namespace, e.Found, e.Want, e.Found)
}

// formatCheck is a store's one check of its namespace's format, made before its first
// script call or job read: a fresh namespace takes StorageFormat, and a namespace in
// another format stays refused for the store's life. A check that could not reach Redis
// is made again by the next call.
type formatCheck struct {
	done atomic.Bool
	mu   sync.Mutex
	err  error // the *FormatError when done and refused
	// unmarked: the namespace had no marker at the check; markFormat writes it.
	unmarked atomic.Bool
}

// markFormat records StorageFormat in a namespace found without one, after a call that
// stored data there succeeded (an enqueue, a workflow's start or append, a schedule):
// that data is what a build of another format would misread, and a call that wrote
// nothing (a refusal, an empty append) must leave the namespace as it was.
// SET NX keeps a marker another store wrote meanwhile.
func (s *Store) markFormat(ctx context.Context) {
	if s.format.unmarked.CompareAndSwap(true, false) {
		if err := s.rdb.SetArgs(ctx, s.keys.Format(), StorageFormat, redis.SetArgs{Mode: "NX"}).Err(); err != nil && !errors.Is(err, redis.Nil) {
			s.format.unmarked.Store(true) // the next successful enqueue tries again
		}
	}
}

// CheckFormat returns *FormatError when the namespace is stored in a format this build
// does not read, which every call of the store would return too. worker.Start calls it,
// so that a worker of the wrong build fails to start instead of failing every call.
func (s *Store) CheckFormat(ctx context.Context) error {
	return s.checkFormat(ctx)
}

// checkFormat records StorageFormat in a namespace that has no format yet, and refuses
// one recorded in another.
func (s *Store) checkFormat(ctx context.Context) error {
	if s.format.done.Load() {
		return s.format.err
	}
	s.format.mu.Lock()
	defer s.format.mu.Unlock()
	if s.format.done.Load() {
		return s.format.err
	}
	found, err := s.rdb.Get(ctx, s.keys.Format()).Result()
	switch {
	case errors.Is(err, redis.Nil):
		// A fresh namespace: the marker goes with its first enqueued jobs (markFormat),
		// so that a call that writes nothing leaves nothing behind.
		s.format.unmarked.Store(true)
		found = StorageFormat
	case err != nil:
		// Redis did not answer, or refused the client (NOAUTH, NOPERM): the caller's call
		// failed as it would have without the check, which the next call makes again.
		return err
	}
	if found != StorageFormat {
		s.format.err = &FormatError{Namespace: s.cfg.Namespace, Found: found, Want: StorageFormat}
	}
	s.format.done.Store(true)
	return s.format.err
}
