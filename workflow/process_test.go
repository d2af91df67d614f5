package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueuetest"
	"github.com/headgate/headgate/worker"
	"github.com/headgate/headgate/workflow"
)

// envChildWorker makes the test binary a worker process serving the journey workflow
// (its spec in JSON): the test re-executes itself as a worker it can SIGKILL.
const envChildWorker = "HEADGATE_WF_CHILD_WORKER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(envChildWorker); spec != "" {
		if err := runChildWorker(spec); err != nil {
			fmt.Fprintln(os.Stderr, "child worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	redistest.Main(m)
}

// childSpec says how a child worker reaches the Redis under test.
type childSpec struct {
	Cluster   bool
	Addrs     []string
	Namespace string
}

func (c childSpec) client() redis.UniversalClient {
	if c.Cluster {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	}
	return redis.NewClient(&redis.Options{Addr: c.Addrs[0]})
}

func runChildWorker(spec string) error {
	var c childSpec
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		return err
	}
	rdb := c.client()
	w, err := worker.New(rdb, &worker.Config{Namespace: c.Namespace, ID: "child", Lease: 10 * time.Second})
	if err != nil {
		return err
	}
	workflow.Register(w, "journey", journey(rdb, c.Namespace, true))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	return w.Run(ctx)
}

// Keys the journey's steps write, in the namespace so its cleanup deletes them.
func callsKey(ns string) string   { return "hg:{" + ns + "}:test:calls" }
func startedKey(ns string) string { return "hg:{" + ns + "}:test:started" }

// journey runs two steps, sleeps 30 days, then takes two signals. In a child worker
// (dieInTwo) step two announces itself and then hangs until the process is killed.
func journey(rdb redis.UniversalClient, ns string, dieInTwo bool) func(workflow.Context, string) (string, error) {
	step := func(ctx workflow.Context, name string) (string, error) {
		// Step one commits its result before step two runs (Checkpoint): the kill in
		// step two leaves it memoized.
		opts := &workflow.StepOptions{Checkpoint: name == "one"}
		return workflow.Step(ctx, name, func(ctx context.Context) (string, error) {
			if err := rdb.RPush(ctx, callsKey(ns), name).Err(); err != nil {
				return "", err
			}
			if name == "two" && dieInTwo {
				if err := rdb.RPush(ctx, startedKey(ns), name).Err(); err != nil {
					return "", err
				}
				<-ctx.Done()
				return "", ctx.Err()
			}
			return name, nil
		}, opts)
	}
	return func(ctx workflow.Context, in string) (string, error) {
		one, err := step(ctx, "one")
		if err != nil {
			return "", err
		}
		two, err := step(ctx, "two")
		if err != nil {
			return "", err
		}
		if err := workflow.Sleep(ctx, "month", 30*24*time.Hour); err != nil {
			return "", err
		}
		early, _, err := workflow.Await[string](ctx, "go", 0)
		if err != nil {
			return "", err
		}
		late, _, err := workflow.Await[string](ctx, "go", 0)
		if err != nil {
			return "", err
		}
		return strings.Join([]string{in, one, two, early, late}, "+"), nil
	}
}

func connectionOf(t *testing.T, rdb redis.UniversalClient, ns string) childSpec {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return childSpec{Cluster: true, Addrs: c.Options().Addrs, Namespace: ns}
	case *redis.Client:
		return childSpec{Addrs: []string{c.Options().Addr}, Namespace: ns}
	}
	t.Fatalf("no way to hand a %T to a child process", rdb)
	return childSpec{}
}

// TestWorkerProcessKilled: a worker process is SIGKILLed in the middle of a step; the
// step it finished stays memoized, the run resumes on another worker, sleeps 30 days
// on the store clock, and takes a signal sent before its await and one sent after.
func TestWorkerProcessKilled(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		store := rqueuetest.NewStore(t, rdb)
		ns := store.Namespace()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := store.FreezeClock(ctx, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		client := workflow.NewClientFromStore(store)

		spec, err := json.Marshal(connectionOf(t, rdb, ns))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChildWorker+"="+string(spec))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killed := false
		t.Cleanup(func() {
			if !killed {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		if _, err := client.Start(ctx, "journey", "in", workflow.StartOptions{ID: "j-1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := rdb.BLPop(ctx, time.Minute, startedKey(ns)).Result(); err != nil {
			t.Fatalf("the child worker never reached step two: %v", err)
		}
		if err := cmd.Process.Kill(); err != nil { // SIGKILL: no ack, no hand-back
			t.Fatal(err)
		}
		_ = cmd.Wait()
		killed = true

		// The dead worker's lease runs out on the store clock and the task is reclaimed.
		if err := store.AdvanceClock(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
		if r, err := store.ReclaimExpired(ctx, 10); err != nil || len(r) != 1 {
			t.Fatalf("reclaim: %+v, %v; want the dead worker's task", r, err)
		}
		if err := store.AdvanceClock(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}

		tasks := make(chan error, 100)
		w, err := worker.New(rdb, &worker.Config{Namespace: ns, ID: "survivor", Middleware: []worker.Middleware{
			func(next worker.HandlerFunc) worker.HandlerFunc {
				return func(ctx context.Context, c *headgate.Claim) error {
					err := next(ctx, c)
					tasks <- err
					return err
				}
			}}})
		if err != nil {
			t.Fatal(err)
		}
		workflow.Register(w, "journey", journey(rdb, ns, false))
		startWorker(t, ctx, w)
		waitTask := func(what string) {
			t.Helper()
			select {
			case err := <-tasks:
				var settled *worker.SettledError
				if !errors.As(err, &settled) {
					t.Fatalf("%s: the task failed: %v", what, err)
				}
			case <-ctx.Done():
				t.Fatalf("%s: no task ended", what)
			}
		}
		waitTask("the resumed task that reaches the sleep")
		if err := client.Signal(ctx, "j-1", "go", "early"); err != nil {
			t.Fatal(err)
		}
		// The signal wakes the run, which finds its sleep still on and waits again. The
		// clock jumps only after that task: a month's jump under a running task would
		// expire its lease, and the store would rightly refuse its commit.
		waitTask("the task the early signal woke")
		if err := store.AdvanceClock(ctx, 30*24*time.Hour); err != nil {
			t.Fatal(err)
		}
		waitTask("the task after the month, which awaits the second signal")
		if err := client.Signal(ctx, "j-1", "go", "late"); err != nil {
			t.Fatal(err)
		}
		got, err := workflow.Result[string](ctx, client, "j-1")
		if want := "in+one+two+early+late"; err != nil || got != want {
			t.Fatalf("result %q, %v; want %q", got, err, want)
		}
		calls, err := rdb.LRange(ctx, callsKey(ns), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"one", "two", "two"}; !slices.Equal(calls, want) {
			t.Errorf("step calls %v, want %v: one memoized across the kill, two run again", calls, want)
		}
	})
}
