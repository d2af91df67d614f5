package rqueuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/redis/go-redis/v9"
)

// NewStoreFunc returns a store in a fresh namespace of its own for one test, cleaned up
// with the test. Exercise calls it once per case, from parallel subtests.
type NewStoreFunc func(t testing.TB) *headgate.Store

// conformanceCase is one behaviour of the job contract, checked on a fresh store.
type conformanceCase struct {
	name string
	run  func(t *testing.T, s *headgate.Store)
}

// Exercise runs the whole job contract against stores made by newStore: every
// transition and every branch of it, the admission and enqueue policies, the refusal of
// invalid input, and the two live-backend proofs. Each case runs as a parallel subtest on
// its own store, and a case reports every violation it finds, not only the first.
func Exercise(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	ExerciseBackend(t, newStore)
	ExerciseValidation(t, newStore)
}

// ExerciseBackend is Exercise without the refusal of invalid input, which Go decides
// before any script runs: a test that runs the contract on several backends runs this
// on each and ExerciseValidation on one.
func ExerciseBackend(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	var all []conformanceCase
	for _, cases := range [][]conformanceCase{
		enqueueCases, enqueueCorruptCases, enqueueUniqueCases,
		admitCases, admitRateCases, admitDRRCases, admitProbationCases, admitCorruptCases,
		ackCases, ackHistoryCases, ackSnoozeCases, ackCorruptCases,
		renewCases, checkpointCases, writeOutputCases, writeProgressCases,
		reclaimCases, reclaimJitterCases, reclaimCorruptCases,
		promoteCases, evictCases, evictRetentionCases, evictCorruptCases,
		claimDutyCases, releaseDutyCases, heartbeatCases, recordSeriesCases,
		cancelCases, releasePendingCases, releaseQuarantineCases, setRateLimitCases, setPolicyCases,
		retryCases, editCases, deleteCases, whyCases,
		listJobsCases, bulkCancelCases, bulkRetryCases, bulkDeleteCases,
		putScheduleCases, pauseScheduleCases, removeScheduleCases, fireScheduleCases, runScheduleCases,
		clockCases, clockCorruptCases, statsCases,
	} {
		all = append(all, cases...)
	}
	runCases(t, newStore, all)
	t.Run("StickyRouting", func(t *testing.T) {
		t.Parallel()
		AssertStickyRouting(t, newStore(t))
	})
	t.Run("EnqueueBackpressure", func(t *testing.T) {
		t.Parallel()
		AssertEnqueueBackpressure(t, newStore(t), "bp")
	})
}

// ExerciseValidation checks that each kind of invalid input is refused with
// *headgate.InvalidError and leaves the store unchanged.
func ExerciseValidation(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	runCases(t, newStore, slices.Concat(enqueueValidationCases, validationCases, operatorValidationCases, scheduleValidationCases))
}

func runCases(t *testing.T, newStore NewStoreFunc, cases []conformanceCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			c.run(t, s)
			checkCounts(t, s)
		})
	}
}

// epoch is where the cases freeze the store clock.
var epoch = time.UnixMilli(1_700_000_000_000)

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func freeze(t testing.TB, s *headgate.Store) context.Context {
	t.Helper()
	ctx := ctxFor(t)
	if err := s.FreezeClock(ctx, epoch); err != nil {
		t.Fatalf("freeze clock: %v", err)
	}
	return ctx
}

func advance(t testing.TB, ctx context.Context, s *headgate.Store, d time.Duration) {
	t.Helper()
	if err := s.AdvanceClock(ctx, d); err != nil {
		t.Fatalf("advance clock: %v", err)
	}
}

func job(id string) headgate.Envelope {
	return headgate.Envelope{ID: id, Kind: "test:job", Payload: []byte(`{"n":1}`), Retention: time.Hour}
}

func mustEnqueue(t testing.TB, ctx context.Context, s *headgate.Store, jobs ...headgate.Envelope) []headgate.EnqueueResult {
	t.Helper()
	res, err := s.Enqueue(ctx, jobs...)
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	return res
}

// mustPromote promotes the due jobs (at most 10) and returns how many.
func mustPromote(t testing.TB, ctx context.Context, s *headgate.Store) int {
	t.Helper()
	n, _, err := s.PromoteDue(ctx, 10)
	if err != nil {
		t.Fatalf("promote: %v", err)
	}
	return n
}

// mustEvict evicts the jobs whose retention lapsed (at most 10) and returns how many.
func mustEvict(t testing.TB, ctx context.Context, s *headgate.Store) int {
	t.Helper()
	n, err := s.EvictRetained(ctx, 10)
	if err != nil {
		t.Fatalf("evict: %v", err)
	}
	return n
}

// admissions numbers the lease ids admitReq and mustAdmit make: each admission needs a
// lease id of its own, since a second call with the same one is a repeat of the first.
var admissions atomic.Uint64

func newLeaseID(worker string) string {
	return fmt.Sprintf("%s-lease-%d", worker, admissions.Add(1))
}

func admitReq(worker string, capacity int, queues ...string) headgate.AdmitRequest {
	if len(queues) == 0 {
		queues = []string{headgate.QueueDefault}
	}
	return headgate.AdmitRequest{Worker: worker, LeaseID: newLeaseID(worker), Queues: queues,
		Capacity: capacity, Lease: time.Minute}
}

// mustAdmit admits under a new lease id, so that a case may admit with one request again
// and again.
func mustAdmit(t testing.TB, ctx context.Context, s *headgate.Store, req headgate.AdmitRequest) []headgate.Claim {
	t.Helper()
	req.LeaseID = newLeaseID(req.Worker)
	claims, err := s.Admit(ctx, req)
	if err != nil {
		t.Fatalf("admit: %v", err)
	}
	return claims
}

// admitOne admits exactly one job and fails otherwise.
func admitOne(t testing.TB, ctx context.Context, s *headgate.Store, queues ...string) headgate.Claim {
	t.Helper()
	claims := mustAdmit(t, ctx, s, admitReq("w1", 1, queues...))
	if len(claims) != 1 {
		t.Fatalf("admit: got %d claims, want 1", len(claims))
	}
	return claims[0]
}

// heldJob freezes the store clock, enqueues job "a" and admits it: the state of a case
// about what the holder of a running job may do, and what others may not.
func heldJob(t testing.TB, s *headgate.Store) (context.Context, headgate.Claim) {
	t.Helper()
	ctx := freeze(t, s)
	mustEnqueue(t, ctx, s, job("a"))
	return ctx, admitOne(t, ctx, s)
}

func mustAck(t testing.TB, ctx context.Context, s *headgate.Store, c headgate.Claim, o headgate.Outcome, opts *headgate.AckOpts) headgate.State {
	t.Helper()
	st, err := s.Ack(ctx, c.LeaseRef(), o, opts)
	if err != nil {
		t.Fatalf("ack %s of %s: %v", o, c.Envelope.ID, err)
	}
	return st
}

// staleLease is c's lease a fence back: what a holder has that the job has moved past.
func staleLease(c headgate.Claim) headgate.LeaseRef {
	l := c.LeaseRef()
	l.Fence--
	return l
}

// stateOf returns a job's state, or headgate.StateDeleted when it is gone.
func stateOf(t testing.TB, ctx context.Context, s *headgate.Store, id string) headgate.State {
	t.Helper()
	j, err := s.GetJob(ctx, id)
	if errors.Is(err, headgate.ErrJobNotFound) {
		return headgate.StateDeleted
	}
	if err != nil {
		t.Fatalf("get job %s: %v", id, err)
	}
	return j.State
}

func getJob(t testing.TB, ctx context.Context, s *headgate.Store, id string) *headgate.Job {
	t.Helper()
	j, err := s.GetJob(ctx, id)
	if err != nil {
		t.Fatalf("get job %s: %v", id, err)
	}
	return j
}

func wantState(t testing.TB, ctx context.Context, s *headgate.Store, id string, want headgate.State) {
	t.Helper()
	if got := stateOf(t, ctx, s, id); got != want {
		t.Errorf("job %s is %s, want %s", id, got, want)
	}
}

func ids(claims []headgate.Claim) []string {
	out := make([]string, len(claims))
	for i, c := range claims {
		out[i] = c.Envelope.ID
	}
	return out
}

// wantErr checks that err is an E (errors.As) and returns it.
func wantErr[E error](t testing.TB, err error) E {
	t.Helper()
	var target E
	if !errors.As(err, &target) {
		t.Errorf("got error %v, want %T", err, target)
	}
	return target
}

// snapshot renders every key of the store's namespace with its contents, so a test can
// show that a refused call changed nothing. The event counters are left out: a refusal
// counts itself there (a lease rejection, a backpressure refusal) and changes no job.
func snapshot(t testing.TB, ctx context.Context, s *headgate.Store) string {
	t.Helper()
	rdb := s.Client()
	names, err := scanNamespace(ctx, s)
	if err != nil {
		t.Fatalf("snapshot scan: %v", err)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var b strings.Builder
	for _, k := range names {
		if strings.HasSuffix(k, "}:counters") {
			continue
		}
		typ := rdb.Type(ctx, k).Val()
		var v any
		switch typ {
		case "string":
			v = rdb.Get(ctx, k).Val()
		case "hash":
			v = rdb.HGetAll(ctx, k).Val()
		case "list":
			v = rdb.LRange(ctx, k, 0, -1).Val()
		case "set":
			m := rdb.SMembers(ctx, k).Val()
			slices.Sort(m)
			v = m
		case "zset":
			v = rdb.ZRangeWithScores(ctx, k, 0, -1).Val()
		}
		fmt.Fprintf(&b, "%s %s %v\n", k, typ, v)
	}
	return b.String()
}

// writesNothing runs f, a call that must find nothing to do (f checks its result), and
// checks that it left the namespace as it was.
func writesNothing(t testing.TB, ctx context.Context, s *headgate.Store, what string, f func()) {
	t.Helper()
	before := snapshot(t, ctx, s)
	f()
	if after := snapshot(t, ctx, s); after != before {
		t.Errorf("%s changed the store:\nbefore:\n%s\nafter:\n%s", what, before, after)
	}
}

// unchanged runs f, which must fail, and checks that it left the namespace as it was.
func unchanged(t testing.TB, ctx context.Context, s *headgate.Store, what string, f func() error) error {
	t.Helper()
	before := snapshot(t, ctx, s)
	err := f()
	if err == nil {
		t.Errorf("%s: succeeded, want an error", what)
		return nil
	}
	if after := snapshot(t, ctx, s); after != before {
		t.Errorf("%s: refused with %v but changed the store:\nbefore:\n%s\nafter:\n%s", what, err, before, after)
	}
	return err
}

// checkCounts compares the per-queue state counts the scripts maintain with the states of
// the jobs actually stored (found by a scan of the job hashes, not through the indexes):
// every transition must move its counts exactly. A held job counts as held, not
// available; an unrunnable one (parked by its rate class as heavier than the burst,
// "parked" "u" in its hash) as available and unrunnable. Then the job indexes and the
// partition counts must hold exactly the stored jobs (checkIndexes).
func checkCounts(t testing.TB, s *headgate.Store) {
	t.Helper()
	ctx := ctxFor(t)
	actual := map[string]map[headgate.State]int64{}
	held, unrunnable := map[string]int64{}, map[string]int64{}
	var availableIDs, availableQueues []string
	stored := storedJobs(t, ctx, s)
	for _, j := range stored {
		if actual[j.Queue] == nil {
			actual[j.Queue] = map[headgate.State]int64{}
		}
		if j.Held {
			held[j.Queue]++
			continue
		}
		actual[j.Queue][j.State]++
		if j.State == headgate.StateAvailable && j.RateClass != "" {
			availableIDs = append(availableIDs, j.ID)
			availableQueues = append(availableQueues, j.Queue)
		}
	}
	pipe := s.Client().Pipeline()
	parked := make([]*redis.StringCmd, len(availableIDs))
	for i, id := range availableIDs {
		parked[i] = pipe.HGet(ctx, nsKey(s, "job:"+id), "parked")
	}
	if len(parked) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("read parked marks: %v", err)
		}
	}
	for i, c := range parked {
		if c.Val() == "u" {
			unrunnable[availableQueues[i]]++
		}
	}
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatalf("queue stats: %v", err)
	}
	for _, st := range stats {
		if st.Held != held[st.Queue] {
			t.Errorf("queue %s: held count is %d, but %d jobs are held", st.Queue, st.Held, held[st.Queue])
		}
		if st.Unrunnable != unrunnable[st.Queue] {
			t.Errorf("queue %s: unrunnable count is %d, but %d jobs are unrunnable", st.Queue, st.Unrunnable, unrunnable[st.Queue])
		}
		want := actual[st.Queue]
		for _, state := range headgate.States {
			if st.Counts[state] != want[state] {
				t.Errorf("queue %s: count of %s is %d, but %d jobs are %s", st.Queue, state, st.Counts[state], want[state], state)
			}
		}
		delete(actual, st.Queue)
	}
	for q, c := range actual {
		t.Errorf("queue %s has jobs %v but no stats", q, c)
	}
	checkIndexes(t, ctx, s, stored)
}

// allPages reads a cursor listing to its end, failing on a page that repeats the cursor.
func allPages[T any](t testing.TB, what string, page func(cursor string) ([]T, string, error)) []T {
	t.Helper()
	var out []T
	cursor := ""
	for range 100_000 {
		items, next, err := page(cursor)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, items...)
		if next == "" {
			return out
		}
		if next == cursor {
			t.Fatalf("%s: the cursor %q did not move", what, next)
		}
		cursor = next
	}
	t.Fatalf("%s: no end after 100,000 pages", what)
	return nil
}
