package inspector_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

// syncBuffer is a bytes.Buffer safe for the slog handler's writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Operator writes that take effect leave one INFO line each; reads and refusals none.
func TestOperatorWritesLogged(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	insp, err := inspector.New(rdb, &inspector.Config{Namespace: "audited", Logger: logger})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "audited"})
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	ctx := context.Background()
	if _, err := store.Enqueue(ctx, headgate.Envelope{ID: "j1", Kind: "k"}, headgate.Envelope{ID: "j2", Kind: "k"}); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	_, editErr := insp.Edit(ctx, "j2", inspector.JobEdit{Priority: new(int32(3))})
	_, deleteErr := insp.Delete(ctx, "j2")
	steps := []error{
		editErr, deleteErr,
		insp.Pause(ctx, "default"),
		insp.Resume(ctx, "default"),
		insp.SetEnqueueLimit(ctx, "default", 5),
		insp.RemoveEnqueueLimit(ctx, "default"),
		insp.SetRateLimit(ctx, "api", inspector.RateLimit{Limit: 10, Window: time.Second, Burst: 10}),
		insp.RemoveRateLimit(ctx, "api"),
		insp.Cancel(ctx, "j1"),
	}
	if err := errors.Join(steps...); err != nil {
		t.Fatalf("operator writes: %v", err)
	}
	if _, err := insp.Retry(ctx, "j1", nil); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	// Refused: not logged.
	if _, err := insp.Retry(ctx, "j1", nil); !errors.As(err, new(*headgate.NotRetryableError)) {
		t.Fatalf("Retry of an available job: %v", err)
	}
	if _, err := insp.Delete(ctx, "missing"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Fatalf("Delete of a missing job: %v", err)
	}
	if err := insp.Cancel(ctx, "missing"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Fatalf("Cancel of a missing job: %v", err)
	}
	if _, err := insp.Stats(ctx); err != nil {
		t.Fatalf("Stats: %v", err)
	}
	want := `level=INFO msg="job edited" namespace=audited job_id=j2 state=available
level=INFO msg="job deleted" namespace=audited job_id=j2 was=available
level=INFO msg="queue paused" namespace=audited queue=default
level=INFO msg="queue resumed" namespace=audited queue=default
level=INFO msg="enqueue limit set" namespace=audited queue=default limit=5
level=INFO msg="enqueue limit removed" namespace=audited queue=default
level=INFO msg="rate limit set" namespace=audited class=api limit=10 window=1s burst=10
level=INFO msg="rate limit removed" namespace=audited class=api
level=INFO msg="job cancelled" namespace=audited job_id=j1
level=INFO msg="job retried" namespace=audited job_id=j1 state=available lifted_quarantine=false
`
	if got := buf.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(buf.String(), "missing") {
		t.Errorf("a refused cancel was logged")
	}
}
