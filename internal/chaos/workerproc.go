//go:build linux

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// EnvWorker carries a worker process's spec (JSON). A test binary whose TestMain calls
// WorkerMain becomes a chaos worker when it is set, so the suite runs real worker
// processes without building a separate binary.
const EnvWorker = "HEADGATE_CHAOS_WORKER"

// JobKind is the kind of the jobs a chaos run enqueues.
const JobKind = "chaos"

// Connection says how a process reaches the Redis under test.
type Connection struct {
	Mode       string   // "single", "sentinel" or "cluster"
	Addrs      []string // the server; the sentinels; the cluster's seed nodes
	MasterName string   // sentinel mode
}

// Client returns a client for c.
func (c Connection) Client() redis.UniversalClient {
	switch c.Mode {
	case "sentinel":
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: c.MasterName, SentinelAddrs: c.Addrs})
	case "cluster":
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	default:
		return redis.NewClient(&redis.Options{Addr: c.Addrs[0]})
	}
}

// workerSpec is what a worker process is told.
type workerSpec struct {
	Conn        Connection
	Control     string // the ledger's server
	Run         string
	Namespace   string
	ID          string
	Concurrency int
	Lease       time.Duration
	WorkMin     time.Duration
	WorkMax     time.Duration
}

// WorkerMain runs a chaos worker and exits when EnvWorker is set; otherwise it returns at
// once. Call it first thing in TestMain.
func WorkerMain() {
	spec := os.Getenv(EnvWorker)
	if spec == "" {
		return
	}
	if err := runWorker(spec); err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runWorker serves the run's jobs until SIGTERM. Its handler records each attempt in the
// ledger, works for a while, and, when the ledger shows that a later holder has started
// the job meanwhile, tries a fenced write as the stale holder it is and records whether
// the store accepted it.
func runWorker(raw string) error {
	var spec workerSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return err
	}
	rdb := spec.Conn.Client()
	defer rdb.Close()
	control := redis.NewClient(&redis.Options{Addr: spec.Control})
	defer control.Close()
	ledger := NewLedger(control, spec.Run)
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: spec.Namespace})
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w, err := worker.New(rdb, &worker.Config{
		Namespace:       spec.Namespace,
		ID:              spec.ID,
		Concurrency:     spec.Concurrency,
		Lease:           spec.Lease,
		RetryBase:       10 * time.Millisecond,
		CrashLimit:      1000, // quarantine is not under test: a job may be caught by many faults
		ReclaimInterval: 100 * time.Millisecond,
		PromoteInterval: 50 * time.Millisecond,
		DutyLease:       time.Second,
		ShutdownTimeout: 2 * time.Second,
		Logger:          log,
	})
	if err != nil {
		return err
	}
	worker.HandleFunc(w, JobKind, func(ctx context.Context, c *headgate.Claim) error {
		// The ledger is on a server no fault touches, with a context of its own: a
		// handler cancelled by a lost lease still records what it did.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		id := c.Envelope.ID
		if err := ledger.Started(lctx, id, c.Fence); err != nil {
			return err
		}
		work := spec.WorkMin + rand.N(spec.WorkMax-spec.WorkMin+1)
		t := time.NewTimer(work) // the job's work
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		stale, err := ledger.Superseded(lctx, id, c.Fence)
		if err != nil {
			return err
		}
		if stale {
			accepted, err := staleProgress(lctx, store, c.LeaseRef())
			if err != nil {
				return err
			}
			detail := fmt.Sprintf("worker %s: progress of %s as fence %d lease %s", spec.ID, id, c.Fence, c.LeaseID)
			if err := ledger.StaleWrite(lctx, accepted, detail); err != nil {
				return err
			}
		}
		return ledger.Done(lctx, id)
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return w.Stop(sctx)
}

// staleProgress writes progress as lease, a holder known to be superseded, until the store
// answers, and reports whether it accepted the write.
func staleProgress(ctx context.Context, store *headgate.Store, lease headgate.LeaseRef) (bool, error) {
	for {
		_, err := store.WriteProgress(ctx, lease, headgate.Progress{Current: 1, Total: 1, Message: "stale holder"})
		var lr *headgate.LeaseRejectedError
		switch {
		case err == nil:
			return true, nil
		case errors.As(err, &lr):
			return false, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		}
		time.Sleep(20 * time.Millisecond) // the store is unreachable: try again shortly
	}
}

// workerProc is a running worker process.
type workerProc struct {
	id     string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// startWorkerProc starts a worker process from cmd (a re-execution of the test binary)
// with spec in its environment; the kernel kills it if the test binary dies.
func startWorkerProc(cmd *exec.Cmd, spec workerSpec, logPath string) (*workerProc, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Env = append(os.Environ(), EnvWorker+"="+string(b))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &workerProc{id: spec.ID, cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// signal sends sig to the process by its pid.
func (p *workerProc) signal(sig syscall.Signal) error {
	return syscall.Kill(p.cmd.Process.Pid, sig)
}

// kill SIGKILLs the process and waits until it is reaped.
func (p *workerProc) kill() {
	_ = p.signal(syscall.SIGKILL)
	<-p.exited
}

// stop asks the process to shut down (SIGTERM) and kills it if it has not exited within
// timeout; it reports whether it exited by itself, and with status 0.
func (p *workerProc) stop(timeout time.Duration) error {
	_ = p.signal(syscall.SIGCONT) // a stopped process cannot act on SIGTERM
	_ = p.signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
		if !p.cmd.ProcessState.Success() {
			return fmt.Errorf("worker %s exited with %v", p.id, p.cmd.ProcessState)
		}
		return nil
	case <-t.C:
		p.kill()
		return fmt.Errorf("worker %s did not stop within %s after SIGTERM; killed", p.id, timeout)
	}
}
