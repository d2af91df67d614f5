package rqueue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
)

type pingArgs struct {
	N int `msgpack:"n"`
}

func (pingArgs) Kind() string { return "ping" }

type pongArgs struct{}

func (pongArgs) Kind() string { return "pong" }

// enqueueGate is a go-redis hook that records the jobs of every enqueue script call that
// reaches Redis, and can hold the next one until released.
type enqueueGate struct {
	mu      sync.Mutex
	sizes   []int
	hold    chan struct{} // the next enqueue call waits for it to close
	entered chan struct{} // receives when a held call waits
}

func (g *enqueueGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *enqueueGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (g *enqueueGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		name := strings.ToLower(cmd.Name())
		if (name != "fcall" && name != "evalsha" && name != "eval") || !isEnqueueCall(args) {
			return next(ctx, cmd)
		}
		g.mu.Lock()
		hold := g.hold
		g.hold = nil
		g.mu.Unlock()
		if hold != nil {
			g.entered <- struct{}{}
			<-hold
		}
		err := next(ctx, cmd)
		// A call that found no script or function ran nothing; the store sends it again.
		if !redis.HasErrorPrefix(err, "NOSCRIPT") && !redis.HasErrorPrefix(err, "Function not found") {
			g.mu.Lock()
			g.sizes = append(g.sizes, int(args[4].(int)))
			g.mu.Unlock()
		}
		return err
	}
}

// isEnqueueCall reports whether a script call's arguments have the enqueue script's
// layout (lua/enqueue.lua, enqueue.go): FCALL function 1 prefix n m (or EVALSHA sha 1
// prefix n m), then n groups of 4 and m detail groups of 8.
func isEnqueueCall(args []any) bool {
	if len(args) < 6 || fmt.Sprint(args[2]) != "1" {
		return false
	}
	n, okN := args[4].(int)
	m, okM := args[5].(int)
	return okN && okM && n > 0 && m >= 0 && m <= n && len(args) == 6+4*n+8*m
}

// holdNext makes the next enqueue script call wait until the returned func is called.
func (g *enqueueGate) holdNext() (release func()) {
	hold := make(chan struct{})
	g.mu.Lock()
	g.hold, g.entered = hold, make(chan struct{}, 1)
	g.mu.Unlock()
	return func() { close(hold) }
}

// reset forgets the calls recorded so far.
func (g *enqueueGate) reset() {
	g.mu.Lock()
	g.sizes = nil
	g.mu.Unlock()
}

func (g *enqueueGate) calls() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.sizes...)
}

type coalesceBundle struct {
	ctx    context.Context
	client *Client
	store  *headgate.Store
	gate   *enqueueGate
}

// wantCalls checks how many jobs each enqueue script call carried, in order; why, when
// not empty, says in a failure why those.
func (b *coalesceBundle) wantCalls(t *testing.T, want []int, why string) {
	t.Helper()
	if got := b.gate.calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("jobs per enqueue script call = %v, want %v%s", got, want, why)
	}
}

// enqueueHolder enqueues the job that holds unique key "k", alone in its call.
func (b *coalesceBundle) enqueueHolder(t *testing.T) *Result {
	t.Helper()
	holder, err := b.client.Enqueue(b.ctx, pingArgs{N: 100}, &EnqueueOpts{Unique: UniqueOpts{Key: "k"}})
	if err != nil {
		t.Fatalf("Enqueue holder: %v", err)
	}
	return holder
}

func setupCoalesce(t *testing.T, rdb redis.UniversalClient, cfg *Config) *coalesceBundle {
	t.Helper()
	gate := &enqueueGate{}
	rdb.AddHook(gate)
	if cfg == nil {
		cfg = &Config{}
	}
	cfg.Namespace = redistest.Namespace(t)
	client, err := NewClient(rdb, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	ctx := context.Background()
	// Loads the script, so no call below meets NOSCRIPT.
	if _, err := client.Enqueue(ctx, pingArgs{N: -1}, nil); err != nil {
		t.Fatalf("warm-up Enqueue: %v", err)
	}
	gate.reset()
	return &coalesceBundle{ctx: ctx, client: client, store: client.Store(), gate: gate}
}

// waitQueued returns once n Enqueue calls wait behind the one in flight.
func (b *coalesceBundle) waitQueued(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.client.singles.mu.Lock()
		k := len(b.client.singles.waiting)
		b.client.singles.mu.Unlock()
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Enqueue calls wait, want %d", k, n)
		}
		runtime.Gosched()
	}
}

type outcome struct {
	res *Result
	err error
}

// heldBurst holds one Enqueue call in flight, starts one concurrent Enqueue call per job
// of burst, waits until they all wait behind it, releases it and returns every call's
// outcome (the held one's first).
func (b *coalesceBundle) heldBurst(t *testing.T, burst []EnqueueParams) []outcome {
	t.Helper()
	release := b.gate.holdNext()
	out := make([]outcome, 1+len(burst))
	var wg sync.WaitGroup
	wg.Go(func() {
		out[0].res, out[0].err = b.client.Enqueue(b.ctx, pingArgs{N: 0}, nil)
	})
	<-b.gate.entered
	for i, p := range burst {
		wg.Go(func() {
			out[1+i].res, out[1+i].err = b.client.Enqueue(b.ctx, p.Args, p.Opts)
		})
	}
	b.waitQueued(t, len(burst))
	release()
	wg.Wait()
	return out
}

func TestEnqueueCoalescesConcurrentCalls(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		var mwMu sync.Mutex
		var mwBatches []int
		tagging := func(next EnqueueFunc) EnqueueFunc {
			return func(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error) {
				mwMu.Lock()
				mwBatches = append(mwBatches, len(envs))
				mwMu.Unlock()
				for i := range envs {
					envs[i].Tags = append(envs[i].Tags, "seen")
				}
				return next(ctx, envs)
			}
		}
		b := setupCoalesce(t, rdb, &Config{EnqueueMiddleware: []EnqueueMiddleware{tagging}})
		mwMu.Lock()
		mwBatches = nil
		mwMu.Unlock()

		var burst []EnqueueParams
		for i := 1; i <= 7; i++ {
			burst = append(burst, EnqueueParams{Args: pingArgs{N: i}})
		}
		out := b.heldBurst(t, burst)

		b.wantCalls(t, []int{1, 7}, ": the seven calls that waited go out together")
		mwMu.Lock()
		if fmt.Sprint(mwBatches) != "[1 1 1 1 1 1 1 1]" {
			t.Errorf("middleware saw batches %v, want eight batches of one", mwBatches)
		}
		mwMu.Unlock()
		ids := map[string]bool{}
		for i, o := range out {
			if o.err != nil {
				t.Fatalf("call %d: %v", i, o.err)
			}
			if ids[o.res.ID] || o.res.State != headgate.StateAvailable || o.res.Duplicate || o.res.Replayed {
				t.Errorf("call %d: result %+v, want a new available job of its own", i, o.res)
			}
			ids[o.res.ID] = true
			job, err := b.store.GetJob(b.ctx, o.res.ID)
			if err != nil {
				t.Fatalf("GetJob %s: %v", o.res.ID, err)
			}
			if fmt.Sprint(job.Tags) != "[seen]" {
				t.Errorf("job %s tags %v, want [seen] from the middleware", o.res.ID, job.Tags)
			}
		}

		// A lone call after the burst goes out at once, alone.
		if _, err := b.client.Enqueue(b.ctx, pingArgs{N: 8}, nil); err != nil {
			t.Fatalf("lone Enqueue: %v", err)
		}
		b.wantCalls(t, []int{1, 7, 1}, "")
	})
}

func TestEnqueueCoalescedPipelinesWhenManyWait(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setupCoalesce(t, rdb, nil)
		release := b.gate.holdNext()
		var wg sync.WaitGroup
		errs := make([]error, 1+pipelineAt+3)
		enqueue := func(i int) {
			wg.Go(func() {
				_, errs[i] = b.client.Enqueue(b.ctx, pingArgs{N: i}, nil)
			})
		}
		enqueue(0)
		<-b.gate.entered
		// pipelineAt calls that wait behind the held one go out together beside it.
		for i := 1; i <= pipelineAt; i++ {
			enqueue(i)
		}
		deadline := time.Now().Add(30 * time.Second)
		for fmt.Sprint(b.gate.calls()) != fmt.Sprint([]int{pipelineAt}) {
			if time.Now().After(deadline) {
				t.Fatalf("jobs per enqueue script call = %v while one call is held, want [%d]", b.gate.calls(), pipelineAt)
			}
			runtime.Gosched()
		}
		// Fewer than pipelineAt wait for the held call to return, then go out together.
		for i := pipelineAt + 1; i < len(errs); i++ {
			enqueue(i)
		}
		b.waitQueued(t, 3)
		// The pipelined call's place is freed once it returned, not taken for the three.
		for {
			b.client.singles.mu.Lock()
			inFlight, waiting := b.client.singles.inFlight, len(b.client.singles.waiting)
			b.client.singles.mu.Unlock()
			if inFlight == 1 && waiting == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d script calls in flight and %d jobs waiting, want 1 (the held one) and 3", inFlight, waiting)
			}
			runtime.Gosched()
		}
		release()
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		b.wantCalls(t, []int{pipelineAt, 1, 3}, "")
		stats, err := b.store.QueueStats(b.ctx)
		if err != nil {
			t.Fatalf("QueueStats: %v", err)
		}
		if len(stats) != 1 || stats[0].Counts[headgate.StateAvailable] != int64(1+len(errs)) {
			t.Errorf("queue stats %+v, want %d available jobs in one queue", stats, 1+len(errs))
		}
	})
}

func TestEnqueueCoalescedOutcomesAreEachJobsOwn(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setupCoalesce(t, rdb, nil)
		holder := b.enqueueHolder(t)
		if _, err := b.client.Enqueue(b.ctx, pongArgs{}, &EnqueueOpts{ID: "taken"}); err != nil {
			t.Fatalf("Enqueue taken: %v", err)
		}
		if _, err := b.client.Enqueue(b.ctx, pingArgs{N: 101}, &EnqueueOpts{ID: "again"}); err != nil {
			t.Fatalf("Enqueue again: %v", err)
		}
		b.gate.reset()

		burst := []EnqueueParams{
			{Args: pingArgs{N: 1}},
			{Args: pingArgs{N: 2}, Opts: &EnqueueOpts{ID: "same"}},
			{Args: pingArgs{N: 2}, Opts: &EnqueueOpts{ID: "same"}},                       // replays the other "same"
			{Args: pingArgs{N: 3}, Opts: &EnqueueOpts{Unique: UniqueOpts{Key: "k"}}},     // duplicate
			{Args: pingArgs{N: 4}, Opts: &EnqueueOpts{Unique: UniqueOpts{Key: "fresh"}}}, // new unique
			{Args: pingArgs{N: 5}, Opts: &EnqueueOpts{ID: "taken"}},                      // kind differs
			{Args: pingArgs{N: 6}, Opts: &EnqueueOpts{Weight: -1}},                       // invalid
			{Args: pingArgs{N: 101}, Opts: &EnqueueOpts{ID: "again"}},                    // replay
			{Args: pingArgs{N: 7}},
		}
		out := b.heldBurst(t, burst)[1:]

		mustNew := func(i int) {
			t.Helper()
			if out[i].err != nil || out[i].res.Duplicate || out[i].res.Replayed || out[i].res.State != headgate.StateAvailable {
				t.Errorf("job %d: %+v, %v; want a new available job", i, out[i].res, out[i].err)
			}
		}
		mustNew(0)
		mustNew(4)
		mustNew(8)
		// The two calls with id "same": one writes it, the other replays it.
		if out[1].err != nil || out[2].err != nil || out[1].res.Replayed == out[2].res.Replayed {
			t.Errorf(`the two "same" calls: %+v, %v and %+v, %v; want one new and one replayed`,
				out[1].res, out[1].err, out[2].res, out[2].err)
		}
		if o := out[3]; o.err != nil || !o.res.Duplicate || o.res.ID != holder.ID {
			t.Errorf("duplicate: %+v, %v; want Duplicate of %s", o.res, o.err, holder.ID)
		}
		var conflict *headgate.IDConflictError
		if o := out[5]; !errors.As(o.err, &conflict) || conflict.JobID != "taken" || o.res != nil {
			t.Errorf("taken id: %+v, %v; want IDConflictError for \"taken\"", o.res, o.err)
		}
		var inv *headgate.InvalidError
		if o := out[6]; !errors.As(o.err, &inv) || inv.Field != "EnqueueOpts.Weight" || o.res != nil {
			t.Errorf("invalid: %+v, %v; want InvalidError on EnqueueOpts.Weight", o.res, o.err)
		}
		if o := out[7]; o.err != nil || !o.res.Replayed || o.res.ID != "again" {
			t.Errorf("replay: %+v, %v; want Replayed", o.res, o.err)
		}
		// The first batch to reach Redis has six jobs: the invalid one never does, and
		// the second "same" and one of the two unique jobs wait for a later batch.
		if calls := b.gate.calls(); len(calls) < 2 || calls[0] != 1 || calls[1] != 6 {
			t.Errorf("jobs per enqueue script call = %v, want 1, then 6, then the rest", calls)
		}
		stats, err := b.store.QueueStats(b.ctx)
		if err != nil {
			t.Fatalf("QueueStats: %v", err)
		}
		// warm-up, holder, taken, again, the held call, and jobs 0, 4, 8 and one "same".
		if len(stats) != 1 || stats[0].Counts[headgate.StateAvailable] != 9 {
			t.Errorf("queue stats %+v, want 9 available jobs in one queue", stats)
		}
	})
}

func TestEnqueueCoalescedBackpressureRefusesOnlyWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setupCoalesce(t, rdb, nil)
		// The warm-up job and the held one leave room for three of the seven that wait.
		if err := b.store.SetEnqueueLimit(b.ctx, QueueDefault, 5); err != nil {
			t.Fatalf("SetEnqueueLimit: %v", err)
		}
		var burst []EnqueueParams
		for i := 1; i <= 7; i++ {
			burst = append(burst, EnqueueParams{Args: pingArgs{N: i}})
		}
		out := b.heldBurst(t, burst)
		if out[0].err != nil {
			t.Fatalf("held call: %v", out[0].err)
		}
		written, refused := 0, 0
		for i, o := range out[1:] {
			var bp *headgate.BackpressureError
			switch {
			case o.err == nil:
				written++
			case errors.As(o.err, &bp):
				refused++
			default:
				t.Errorf("call %d: %v, want success or BackpressureError", i, o.err)
			}
		}
		if written != 3 || refused != 4 {
			t.Errorf("%d written and %d refused, want 3 and 4", written, refused)
		}
	})
}

func TestEnqueueWaitingCallCancelled(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setupCoalesce(t, rdb, nil)
		release := b.gate.holdNext()
		held := make(chan error, 1)
		go func() {
			_, err := b.client.Enqueue(b.ctx, pingArgs{N: 0}, nil)
			held <- err
		}()
		<-b.gate.entered
		ctx, cancel := context.WithCancel(b.ctx)
		waiter := make(chan outcome, 1)
		go func() {
			res, err := b.client.Enqueue(ctx, pingArgs{N: 1}, &EnqueueOpts{ID: "cancelled"})
			waiter <- outcome{res, err}
		}()
		b.waitQueued(t, 1)
		cancel()
		o := <-waiter
		if !errors.Is(o.err, context.Canceled) || o.res != nil || !strings.Contains(o.err.Error(), "nothing was written") {
			t.Errorf("cancelled waiter: %+v, %v; want context.Canceled, nothing written", o.res, o.err)
		}
		release()
		if err := <-held; err != nil {
			t.Fatalf("held call: %v", err)
		}
		if _, err := b.store.GetJob(b.ctx, "cancelled"); !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("GetJob cancelled: %v, want ErrJobNotFound: the job was never sent", err)
		}
		b.wantCalls(t, []int{1}, "")
	})
}

// A replacing duplicate that shares a batch with other calls' jobs refuses that batch,
// which writes nothing; its call still gets the replacement it would have had alone.
func TestEnqueueCoalescedReplacingDuplicateReplaces(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setupCoalesce(t, rdb, nil)
		holder := b.enqueueHolder(t)
		b.gate.reset()
		burst := []EnqueueParams{
			{Args: pingArgs{N: 1}},
			{Args: pingArgs{N: 2}, Opts: &EnqueueOpts{Unique: UniqueOpts{Key: "k", Replace: headgate.ReplacePayload}}},
			{Args: pingArgs{N: 3}},
		}
		out := b.heldBurst(t, burst)[1:]
		for _, i := range []int{0, 2} {
			if o := out[i]; o.err != nil || o.res.Duplicate || o.res.State != headgate.StateAvailable {
				t.Errorf("job %d: %+v, %v; want a new available job", i, o.res, o.err)
			}
		}
		if o := out[1]; o.err != nil || !o.res.Duplicate || !o.res.Replaced || o.res.ID != holder.ID {
			t.Errorf("replacing duplicate: %+v, %v; want Duplicate of %s, Replaced", o.res, o.err, holder.ID)
		}
		job, err := b.store.GetJob(b.ctx, holder.ID)
		if err != nil {
			t.Fatalf("GetJob: %v", err)
		}
		var args pingArgs
		if err := msgpack.Unmarshal(job.Payload, &args); err != nil || args.N != 2 {
			t.Errorf("holder args %+v, %v; want the duplicate's N=2", args, err)
		}
		// The batch of three is refused and writes nothing; the duplicate goes alone, then the rest.
		b.wantCalls(t, []int{1, 3, 1, 2}, "")
	})
}
