package headgate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

type failoverArgs struct{}

func (failoverArgs) Kind() string { return "failover" }

// TestClusterFailover runs producers and workers on a private cluster while the master of
// their namespace's slot is killed and its replica promoted. Nobody intervenes: producers
// retry their enqueues, workers retry admissions, acks, renewals and maintenance, and
// work continues on the new master. Then the killed node comes back, as a supervisor
// would restart it, and rejoins as the new master's replica.
//
// Producers enqueue with DurableReplicas 1 and retry each id until an enqueue returns no
// error. The test asserts that every id so acknowledged was processed in the end: a
// durable acknowledgement survives the failover. It logs what the failover cost: writes
// and completions lost, how long enqueues and admissions stalled, and how a producer
// without DurableReplicas fared.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private 6-node Redis Cluster and fails one master over; skipped in -short mode")
	}
	// Not parallel: it runs before the package's parallel tests start, so the timings it
	// reports are the failover's, not the machine's load, and its load of producers
	// running flat out does not slow the timing-sensitive tests of the package.
	const (
		ns         = "failover"
		producers  = 4
		workers    = 2
		steadyJobs = 300 // acknowledged and processed before the failover
		afterJobs  = 300 // acknowledged after the failover, once the replica is back
		phase      = 45 * time.Second
	)
	ctx, cancel := context.WithTimeout(context.Background(), 4*phase)
	defer cancel()

	cl := redistest.StartCluster(t)
	admin := cl.Client(t)
	slot, err := admin.ClusterKeySlot(ctx, headgate.KeyPattern(ns)).Result()
	if err != nil {
		t.Fatal(err)
	}
	master := cl.MasterFor(int(slot))
	if master == "" {
		t.Fatalf("no master serves slot %d", slot)
	}

	rec := newFailoverRecord()

	// Workers, each on a cluster client of its own, as separate processes would be.
	for i := range workers {
		w, err := worker.New(cl.Client(t), &worker.Config{
			Namespace:       ns,
			ID:              fmt.Sprintf("w%d", i),
			Concurrency:     8,
			Lease:           3 * time.Second,
			RetryBase:       10 * time.Millisecond,
			ReclaimInterval: 100 * time.Millisecond,
			PromoteInterval: 50 * time.Millisecond,
			DutyLease:       time.Second,
			ShutdownTimeout: 5 * time.Second,
			Logger:          failoverLogger(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		worker.HandleFunc(w, failoverArgs{}.Kind(), func(ctx context.Context, c *headgate.Claim) error {
			rec.ran(c.Envelope.ID)
			return nil
		})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := w.Stop(sctx); err != nil {
				t.Errorf("worker %s: Stop: %v", w.ID(), err)
			}
		})
	}

	// Producers: durable ones, and one without DurableReplicas for comparison. Completed
	// jobs are retained, so a replayed id is recognised and the store can be checked.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	durable, err := rqueue.NewClient(cl.Client(t), &rqueue.Config{Namespace: ns, Retention: time.Hour,
		DurableReplicas: 1, DurableTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := rqueue.NewClient(cl.Client(t), &rqueue.Config{Namespace: ns, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for p := range producers {
		wg.Go(func() { rec.produce(ctx, stop, durable, fmt.Sprintf("d%d", p), true) })
	}
	wg.Go(func() { rec.produce(ctx, stop, plain, "plain", false) })
	stopProducers := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopProducers)

	// Steady state.
	rec.waitFor(t, ctx, phase, "jobs acknowledged and processed before the failover", func(p failoverProgress) bool {
		return p.durableAcked >= steadyJobs && p.processed >= steadyJobs
	})

	// The failover.
	failoverAt := time.Now()
	newMaster, err := cl.Failover(master)
	if err != nil {
		t.Fatal(err)
	}
	promotedAt := time.Now()
	rec.promoted(promotedAt)
	t.Logf("master %s of slot %d killed, replica %s promoted: Failover took %s",
		master, slot, newMaster, promotedAt.Sub(failoverAt).Round(time.Millisecond))

	// Work continues on the new master, which has no replica yet: workers admit and
	// finish jobs written after the promotion, and durable enqueues are written but
	// reported not durable (the producers enqueue those ids again until confirmed).
	rec.waitFor(t, ctx, phase, "a job written after the promotion to be processed, and an enqueue reported not durable",
		func(p failoverProgress) bool { return !p.firstRunAfterPromotion.IsZero() && p.notDurable > 0 })
	resumed := rec.progress()
	t.Logf("work resumed without intervention: first enqueue written %s and first new job run %s after the promotion",
		resumed.firstWriteAfterPromotion.Sub(promotedAt).Round(time.Millisecond),
		resumed.firstRunAfterPromotion.Sub(promotedAt).Round(time.Millisecond))

	// The killed node comes back as a replica; durable acknowledgements resume.
	restartAt := time.Now()
	if err := cl.RestartNode(master); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s rejoined as a replica of %s in %s", master, newMaster, time.Since(restartAt).Round(time.Millisecond))
	before := rec.progress().durableAcked
	rec.waitFor(t, ctx, phase, "durable acknowledgements after the replica rejoined", func(p failoverProgress) bool {
		return p.durableAcked >= before+afterJobs
	})
	stopProducers()

	// Every durably acknowledged job is processed in the end; what is not by the deadline
	// is looked up in the store.
	rec.await(ctx, phase, func(p failoverProgress) bool { return p.unprocessed == 0 })
	final := rec.report()
	store, err := headgate.NewStore(admin, &headgate.StoreConfig{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	var missing, stuck []string // acknowledged, never processed: not in the store / in it
	for _, id := range final.unprocessed {
		j, err := store.GetJob(ctx, id)
		switch {
		case errors.Is(err, headgate.ErrJobNotFound):
			missing = append(missing, id)
		case err != nil:
			t.Fatalf("GetJob(%q): %v", id, err)
		default:
			stuck = append(stuck, fmt.Sprintf("%s (%s)", id, j.State))
		}
	}
	plainLost := 0 // acknowledged without DurableReplicas, then gone
	for _, id := range final.plainUnprocessed {
		if _, err := store.GetJob(ctx, id); errors.Is(err, headgate.ErrJobNotFound) {
			plainLost++
		}
	}

	t.Logf("durable producers: %d jobs acknowledged, %d enqueue attempts failed (%s)",
		final.durableAcked, final.failures, final.errorSummary)
	t.Logf("lost in the failover window: %d writes that had not been confirmed by a replica "+
		"(rewritten by the producers' retries), %d completions (those jobs ran again); "+
		"%d acknowledged jobs lost", final.lostWrites, final.reruns, len(missing))
	t.Logf("enqueues stalled for at most %s (written) and %s (durably acknowledged, replica restart included); "+
		"no job started for %s",
		final.maxWriteGap.Round(time.Millisecond), final.maxAckGap.Round(time.Millisecond), final.maxRunGap.Round(time.Millisecond))
	t.Logf("producer without DurableReplicas: %d jobs acknowledged, %d of them lost", final.plainAcked, plainLost)

	if len(missing) > 0 {
		t.Errorf("%d durably acknowledged jobs were lost: never processed and not in the store: %v",
			len(missing), missing[:min(len(missing), 20)])
	}
	if len(stuck) > 0 {
		t.Errorf("%d durably acknowledged jobs are in the store but were not processed within %s: %v",
			len(stuck), phase, stuck[:min(len(stuck), 20)])
	}
}

// failoverRecord is what the test's producers and handlers saw.
type failoverRecord struct {
	mu           sync.Mutex
	written      []time.Time          // when an enqueue returned results (the jobs were on a master)
	acks         []time.Time          // when a durable enqueue returned no error
	runs         []time.Time          // when a handler started
	writtenAt    map[string]time.Time // when each id was first written
	acked        map[string]bool      // durable ids acknowledged without error
	pending      map[string]bool      // durable ids acknowledged and not yet processed
	plainAcked   map[string]bool      // ids acknowledged to the producer without DurableReplicas
	ranCount     map[string]int
	lostWrites   int // ids written, then written again as new: the first write was lost
	failures     int
	errorClasses map[string]int
	promotedAt   time.Time // when the failover was over
	firstWrite   time.Time // the first write after promotedAt
	firstRun     time.Time // the first run of a job first written after promotedAt
	changed      chan struct{}
}

func newFailoverRecord() *failoverRecord {
	return &failoverRecord{
		writtenAt:    map[string]time.Time{},
		acked:        map[string]bool{},
		pending:      map[string]bool{},
		plainAcked:   map[string]bool{},
		ranCount:     map[string]int{},
		errorClasses: map[string]int{},
		changed:      make(chan struct{}, 1),
	}
}

// notify wakes waitFor after a change.
func (r *failoverRecord) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *failoverRecord) promoted(at time.Time) {
	r.mu.Lock()
	r.promotedAt = at
	r.mu.Unlock()
}

func (r *failoverRecord) ran(id string) {
	now := time.Now()
	r.mu.Lock()
	r.ranCount[id]++
	delete(r.pending, id)
	r.runs = append(r.runs, now)
	if w, ok := r.writtenAt[id]; ok && r.firstRun.IsZero() && !r.promotedAt.IsZero() && w.After(r.promotedAt) {
		r.firstRun = now
	}
	r.mu.Unlock()
	r.notify()
}

// produce enqueues jobs one after another until stop is closed, retrying each id until
// an enqueue of it returns no error. Retries back off briefly: they wait for the cluster
// to recover, not for time to pass in the store.
func (r *failoverRecord) produce(ctx context.Context, stop <-chan struct{}, c *rqueue.Client, prefix string, durable bool) {
	for n := 0; ; n++ {
		id := fmt.Sprintf("%s-%06d", prefix, n)
		wrote := false
		backoff := time.Millisecond
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			res, err := c.Enqueue(cctx, failoverArgs{}, &rqueue.EnqueueOpts{ID: id})
			cancel()
			r.enqueued(id, res, err, durable, &wrote)
			if err == nil {
				break
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-stop:
			}
			t.Stop()
			backoff = min(2*backoff, 100*time.Millisecond)
		}
	}
}

// enqueued records one enqueue attempt of id; wrote tells whether an earlier attempt of
// the id returned results.
func (r *failoverRecord) enqueued(id string, res *rqueue.Result, err error, durable bool, wrote *bool) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify()
	if res != nil {
		if *wrote && !res.Replayed {
			r.lostWrites++
		}
		*wrote = true
		r.written = append(r.written, now)
		if _, ok := r.writtenAt[id]; !ok {
			r.writtenAt[id] = now
		}
		if r.firstWrite.IsZero() && !r.promotedAt.IsZero() {
			r.firstWrite = now
		}
	}
	switch {
	case err == nil && durable:
		r.acked[id] = true
		if r.ranCount[id] == 0 {
			r.pending[id] = true
		}
		r.acks = append(r.acks, now)
	case err == nil:
		r.plainAcked[id] = true
	case durable:
		r.failures++
		r.errorClasses[errorClass(err)]++
	}
}

const classNotDurable = "not durable"

// errorClass names an enqueue error by its kind, for the summary.
func errorClass(err error) string {
	var nd *headgate.NotDurableError
	switch msg := err.Error(); {
	case errors.As(err, &nd):
		return classNotDurable
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "CLUSTERDOWN"):
		return "CLUSTERDOWN"
	case strings.Contains(msg, "MOVED"):
		return "MOVED"
	case strings.Contains(msg, "EOF"), strings.Contains(msg, "connection reset"), strings.Contains(msg, "broken pipe"):
		return "connection lost"
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(msg, "i/o timeout"):
		return "timeout"
	default:
		return msg
	}
}

// failoverProgress is what waitFor conditions look at; cheap to take.
type failoverProgress struct {
	durableAcked, processed, unprocessed int
	notDurable                           int // enqueues reported *headgate.NotDurableError
	firstWriteAfterPromotion             time.Time
	firstRunAfterPromotion               time.Time // of a job first written after the promotion
}

func (r *failoverRecord) progress() failoverProgress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return failoverProgress{durableAcked: len(r.acked), processed: len(r.ranCount), unprocessed: len(r.pending),
		notDurable: r.errorClasses[classNotDurable], firstWriteAfterPromotion: r.firstWrite, firstRunAfterPromotion: r.firstRun}
}

// waitFor waits until ok holds, failing the test after timeout.
func (r *failoverRecord) waitFor(t *testing.T, ctx context.Context, timeout time.Duration, what string, ok func(failoverProgress) bool) {
	t.Helper()
	if r.await(ctx, timeout, ok) {
		return
	}
	p := r.progress()
	r.mu.Lock()
	errs := summarize(r.errorClasses)
	r.mu.Unlock()
	t.Fatalf("timed out after %s waiting for %s: %d durable acks, %d jobs processed, %d acknowledged but unprocessed; enqueue errors: %s",
		timeout, what, p.durableAcked, p.processed, p.unprocessed, errs)
}

// await waits until ok holds (true) or timeout passes (false), waking on every recorded
// event.
func (r *failoverRecord) await(ctx context.Context, timeout time.Duration, ok func(failoverProgress) bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if ok(r.progress()) {
			return true
		}
		select {
		case <-r.changed:
		case <-deadline.C:
			return ok(r.progress())
		case <-ctx.Done():
			return ok(r.progress())
		}
	}
}

// failoverReport is the record's summary at the end.
type failoverReport struct {
	durableAcked, plainAcked          int
	unprocessed, plainUnprocessed     []string
	lostWrites, reruns, failures      int
	errorSummary                      string
	maxWriteGap, maxAckGap, maxRunGap time.Duration
}

func (r *failoverRecord) report() failoverReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := failoverReport{durableAcked: len(r.acked), plainAcked: len(r.plainAcked), lostWrites: r.lostWrites,
		failures: r.failures, errorSummary: summarize(r.errorClasses)}
	for id := range r.pending {
		s.unprocessed = append(s.unprocessed, id)
	}
	slices.Sort(s.unprocessed)
	for id := range r.plainAcked {
		if r.ranCount[id] == 0 {
			s.plainUnprocessed = append(s.plainUnprocessed, id)
		}
	}
	for _, n := range r.ranCount {
		s.reruns += n - 1
	}
	s.maxWriteGap, s.maxAckGap, s.maxRunGap = maxGap(r.written), maxGap(r.acks), maxGap(r.runs)
	return s
}

func summarize(classes map[string]int) string {
	var out []string
	for c, n := range classes {
		out = append(out, fmt.Sprintf("%s: %d", c, n))
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// maxGap is the longest time between consecutive events. Goroutines append their events
// concurrently, so they are sorted first.
func maxGap(ts []time.Time) time.Duration {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, time.Time.Compare)
	var gap time.Duration
	for i := 1; i < len(ts); i++ {
		gap = max(gap, ts[i].Sub(ts[i-1]))
	}
	return gap
}

// failoverLogger shows the workers' logs with HEADGATE_TEST_LOG set.
func failoverLogger(t *testing.T) *slog.Logger {
	if os.Getenv("HEADGATE_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("test", t.Name())
}
