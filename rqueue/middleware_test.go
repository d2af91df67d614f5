package rqueue_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
)

func miniClient(t *testing.T) redis.UniversalClient {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// tagging is an enqueue middleware that adds tag to every envelope and records its name
// before and after the rest of the chain.
func tagging(mu *sync.Mutex, trail *[]string, name, tag string) rqueue.EnqueueMiddleware {
	return func(next rqueue.EnqueueFunc) rqueue.EnqueueFunc {
		return func(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error) {
			mu.Lock()
			*trail = append(*trail, name+">")
			mu.Unlock()
			for i := range envs {
				envs[i].Tags = append(envs[i].Tags, tag)
			}
			res, err := next(ctx, envs)
			mu.Lock()
			*trail = append(*trail, "<"+name)
			mu.Unlock()
			return res, err
		}
	}
}

func TestEnqueueMiddleware(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		trail []string
	)
	b := setup(t, miniClient(t), &rqueue.Config{EnqueueMiddleware: []rqueue.EnqueueMiddleware{
		tagging(&mu, &trail, "outer", "from-outer"), tagging(&mu, &trail, "inner", "from-inner"),
	}})
	res := b.mustEnqueue(t, emailArgs{To: "a"}, &rqueue.EnqueueOpts{Tags: []string{"mine"}})
	if want := []string{"outer>", "inner>", "<inner", "<outer"}; !slices.Equal(trail, want) {
		t.Errorf("order = %q, want %q", trail, want)
	}
	if j := b.job(t, res.ID); !slices.Equal(j.Tags, []string{"from-inner", "from-outer", "mine"}) {
		t.Errorf("stored tags %q, want the caller's and both middlewares'", j.Tags)
	}
	many, err := b.client.EnqueueMany(b.ctx, []rqueue.EnqueueParams{{Args: emailArgs{To: "b"}}, {Args: emailArgs{To: "c"}}})
	if err != nil {
		t.Fatalf("EnqueueMany: %v", err)
	}
	for _, r := range many {
		if j := b.job(t, r.ID); !slices.Equal(j.Tags, []string{"from-inner", "from-outer"}) {
			t.Errorf("job %s tags %q, want both middlewares'", r.ID, j.Tags)
		}
	}
	if len(trail) != 8 {
		t.Errorf("trail %q: EnqueueMany went through the chain other than once", trail)
	}
}

func TestEnqueueMiddlewareRefusesBatch(t *testing.T) {
	t.Parallel()
	errNoTenant := errors.New("every job needs a partition")
	b := setup(t, miniClient(t), &rqueue.Config{EnqueueMiddleware: []rqueue.EnqueueMiddleware{
		func(next rqueue.EnqueueFunc) rqueue.EnqueueFunc {
			return func(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error) {
				for _, e := range envs {
					if e.PartitionKey == "" {
						return nil, errNoTenant
					}
				}
				return next(ctx, envs)
			}
		},
	}})
	_, err := b.client.Enqueue(b.ctx, emailArgs{To: "a"}, &rqueue.EnqueueOpts{ID: "refused"})
	if !errors.Is(err, errNoTenant) {
		t.Fatalf("Enqueue = %v, want the middleware's error", err)
	}
	if _, err := b.store.GetJob(b.ctx, "refused"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Errorf("GetJob of the refused job: %v, want ErrJobNotFound", err)
	}
	if _, err := b.client.Enqueue(b.ctx, emailArgs{To: "a"}, &rqueue.EnqueueOpts{Partition: "t1"}); err != nil {
		t.Errorf("Enqueue with a partition: %v", err)
	}
}

// capture is a slog handler that keeps the records' messages and attributes.
type capture struct {
	mu    sync.Mutex
	lines []string
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	c.mu.Lock()
	c.lines = append(c.lines, b.String())
	c.mu.Unlock()
	return nil
}
func (c *capture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *capture) WithGroup(string) slog.Handler      { return c }

func TestNotDurableLogged(t *testing.T) {
	t.Parallel()
	logs := &capture{}
	rdb := redistest.Start(t).Client(t) // no replicas
	b := setup(t, rdb, &rqueue.Config{DurableReplicas: 1, DurableTimeout: 20 * time.Millisecond, Logger: slog.New(logs)})
	_, err := b.client.Enqueue(b.ctx, emailArgs{To: "a"}, &rqueue.EnqueueOpts{ID: "job-1"})
	var nd *headgate.NotDurableError
	if !errors.As(err, &nd) {
		t.Fatalf("Enqueue = %v, want NotDurableError", err)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.lines) != 1 || !strings.HasPrefix(logs.lines[0], "WARN enqueue written but not confirmed") ||
		!strings.Contains(logs.lines[0], "first_job_id=job-1") || !strings.Contains(logs.lines[0], "replicas=0 wanted=1") {
		t.Errorf("log lines %q, want one WARN naming job-1 and 0 of 1 replicas", logs.lines)
	}
}
