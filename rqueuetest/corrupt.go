package rqueuetest

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/redis/go-redis/v9"
)

// The corruption harness: "corrupt each key a call reads and check nothing else changed".
//
// Redis does not roll back a script that raises, so every transition must reach its first
// write only after everything that can fail was read and checked. corruptCheck states one
// call and the state it runs on; assertCorruptionSafe rebuilds that state once per
// corruption of each selected key, runs the call, and holds it to one of two outcomes:
//
//   - the call fails, and the namespace is exactly as it was after the corruption (so only
//     the corrupted key differs from the healthy state), or
//   - the call succeeds; a job it parked is recorded in Store.CorruptJobs with a reason,
//     only the corrupted job is parked, every readable job sits in the index its state
//     says (no half-moved job), every queue's counts equal its jobs' states, and the case's
//     progressed hook confirms the other jobs still moved.
//
// The corruptions of a key are: replaced with a value of another type; and, for a hash,
// each integer field (and, for a job hash, each numeric job field, present or not) set to
// "x" and to an impossible number. A case in a conformance_*_corrupt.go file reads:
//
//	{"Renew/Corrupt", func(t *testing.T, s *headgate.Store) {
//		assertCorruptionSafe(t, s, corruptCheck{
//			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) { ... },
//			keys:  keysNamed("job:", "leases"),
//			call:  func(ctx context.Context, s *headgate.Store) error { ... },
//		})
//	}},
type corruptCheck struct {
	// setup builds the state on a namespace that is empty apart from the frozen clock
	// (epoch). It runs once for the healthy baseline and again before every corruption,
	// and must build the same state each time.
	setup func(t testing.TB, ctx context.Context, s *headgate.Store)
	// keys selects, by name without the namespace prefix ("job:a", "scheduled"), the keys
	// of the built state to corrupt: the keys the call reads. The clock key is never
	// corrupted.
	keys func(name string) bool
	// call is the transition under test.
	call func(ctx context.Context, s *headgate.Store) error
	// progressed, when set, runs after a successful call on a corrupted state and checks
	// that the jobs other than the corrupted one moved as they would have (corrupted is
	// the corrupted key's name without prefix).
	progressed func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string)
	// mustPark makes a successful call on a corrupted job hash (wrong type or a field set
	// to "x" or an impossible number) that the call reads also park that job.
	mustPark func(corrupted, field string) bool
}

// keysNamed selects the keys whose name (without prefix) starts with one of prefixes.
func keysNamed(prefixes ...string) func(string) bool {
	return func(name string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
}

// jobNumericFields are the numeric fields of a job hash (JOB_RANGES in lua/lib.lua), each
// corrupted whether or not the job stores it.
var jobNumericFields = []string{"prio", "sched", "ret", "uwin", "attempt", "maxa", "crash", "charge", "fence", "weight"}

// corruption is one way of spoiling one key.
type corruption struct {
	key   string // without prefix
	field string // "" when the whole key is replaced
	value string
	apply func(ctx context.Context, rdb redis.UniversalClient, full string) error
}

func (c corruption) String() string {
	if c.field == "" {
		return c.key + "/wrongtype"
	}
	return c.key + "/" + c.field + "=" + c.value
}

// impossibleNumber is past every numeric range of the store (2^53).
const impossibleNumber = "99999999999999999999"

// corruptionsOf lists the corruptions of one key of the built state.
func corruptionsOf(t testing.TB, ctx context.Context, rdb redis.UniversalClient, prefix, name string) []corruption {
	t.Helper()
	full := prefix + name
	typ, err := rdb.Type(ctx, full).Result()
	if err != nil {
		t.Fatalf("type %s: %v", full, err)
	}
	wrong := corruption{key: name, apply: func(ctx context.Context, rdb redis.UniversalClient, full string) error {
		if err := rdb.Del(ctx, full).Err(); err != nil {
			return err
		}
		if typ == "string" {
			return rdb.HSet(ctx, full, "corrupt", "1").Err()
		}
		return rdb.Set(ctx, full, "corrupt", 0).Err()
	}}
	out := []corruption{wrong}
	if typ != "hash" {
		return out
	}
	h, err := rdb.HGetAll(ctx, full).Result()
	if err != nil {
		t.Fatalf("hgetall %s: %v", full, err)
	}
	var fields []string
	for f, v := range h {
		if _, err := strconv.ParseInt(v, 10, 64); err == nil {
			fields = append(fields, f)
		}
	}
	if strings.HasPrefix(name, "job:") {
		fields = append(fields, jobNumericFields...)
	}
	slices.Sort(fields)
	for _, f := range slices.Compact(fields) {
		for _, v := range []string{"x", impossibleNumber} {
			out = append(out, corruption{key: name, field: f, value: v,
				apply: func(ctx context.Context, rdb redis.UniversalClient, full string) error {
					return rdb.HSet(ctx, full, f, v).Err()
				}})
		}
	}
	return out
}

// namespaceKeys lists the keys of the store's namespace, sorted, with their prefix.
func namespaceKeys(t testing.TB, ctx context.Context, s *headgate.Store) []string {
	t.Helper()
	names, err := scanNamespace(ctx, s)
	if err != nil {
		t.Fatalf("scan namespace: %v", err)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// wipeNamespace deletes every key of the store's namespace (one key per DEL: a cluster
// serves them all from the namespace's slot, but keeps the calls simple).
func wipeNamespace(t testing.TB, ctx context.Context, s *headgate.Store) {
	t.Helper()
	for _, k := range namespaceKeys(t, ctx, s) {
		if err := s.Client().Del(ctx, k).Err(); err != nil {
			t.Fatalf("wipe %s: %v", k, err)
		}
	}
}

// jobView is what the consistency check knows of one job: readable is false when its
// hash cannot be read (wrong type).
type jobView struct {
	readable                   bool
	state, queue, held, parked string
}

// nsKey is the key called name in the namespace of s, for the cases that read or damage
// stored data directly: the prefix comes from headgate.KeyPattern, so rqueuetest spells
// key names only, never the prefix.
func nsKey(s *headgate.Store, name string) string {
	return strings.TrimSuffix(headgate.KeyPattern(s.Namespace()), "*") + name
}

// viewJobs reads every job hash of the namespace without failing on corrupt ones.
func viewJobs(t testing.TB, ctx context.Context, s *headgate.Store) map[string]jobView {
	t.Helper()
	prefix := nsKey(s, "")
	out := map[string]jobView{}
	for _, k := range namespaceKeys(t, ctx, s) {
		id, ok := strings.CutPrefix(k, prefix+"job:")
		if !ok {
			continue
		}
		v, err := s.Client().HMGet(ctx, k, "state", "queue", "held", "parked").Result()
		if err != nil {
			out[id] = jobView{}
			continue
		}
		str := func(i int) string { x, _ := v[i].(string); return x }
		// A job of the default queue leaves "queue" out of its hash.
		out[id] = jobView{readable: true, state: str(0), queue: cmp.Or(str(1), headgate.QueueDefault), held: str(2), parked: str(3)}
	}
	return out
}

// indexes are the ids each index of the namespace holds.
type indexes struct {
	scheduled, leases, available, held, parked map[string]bool
}

func readIndexes(t testing.TB, ctx context.Context, s *headgate.Store) indexes {
	t.Helper()
	prefix := nsKey(s, "")
	rdb := s.Client()
	ix := indexes{map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}}
	members := func(k string, zset bool) []string {
		var m []string
		var err error
		if zset {
			m, err = rdb.ZRange(ctx, k, 0, -1).Result()
		} else {
			m, err = rdb.SMembers(ctx, k).Result()
		}
		if err != nil {
			return nil // a corrupted index: nothing is in it
		}
		return m
	}
	for _, k := range namespaceKeys(t, ctx, s) {
		name := strings.TrimPrefix(k, prefix)
		switch {
		case name == "scheduled":
			for _, id := range members(k, true) {
				ix.scheduled[id] = true
			}
		case name == "leases":
			for _, id := range members(k, true) {
				ix.leases[id] = true
			}
		case strings.HasPrefix(name, "held:"):
			for _, id := range members(k, false) {
				ix.held[id] = true
			}
		case strings.HasPrefix(name, "parked:"):
			for _, id := range members(k, true) {
				ix.parked[id] = true
			}
		case strings.HasPrefix(name, "q:") && strings.Contains(name, ":p:"):
			for _, m := range members(k, true) {
				w := rankWidth
				if len(m) > 4 && m[4] >= '0' {
					w = legacyRankWidth
				}
				if len(m) > w {
					ix.available[m[w:]] = true
				}
			}
		}
	}
	return ix
}

// rankWidth is the length of the rank before the id in a partition member (RANK_WIDTH in
// lua/lib.lua), legacyRankWidth that of a member written before ranks were binary (its
// 5th byte is a digit; LEGACY_RANK_WIDTH).
const (
	rankWidth       = 11
	legacyRankWidth = 25
)

// checkIndexed reports every readable job (not parked, not the corrupted one) whose state
// and indexes disagree: the half-moved jobs of defect 1.
func checkIndexed(t testing.TB, what string, jobs map[string]jobView, ix indexes, skip map[string]bool) {
	t.Helper()
	for id, j := range jobs {
		if !j.readable || skip[id] {
			continue
		}
		where := map[string]bool{"scheduled": ix.scheduled[id], "leases": ix.leases[id],
			"partition": ix.available[id], "held": ix.held[id], "parked": ix.parked[id]}
		want := map[string]bool{}
		switch j.state {
		case "scheduled", "retryable":
			want["scheduled"] = true
		case "running":
			want["leases"] = true
		case "available":
			switch {
			case j.held == "1":
				want["held"] = true
			case j.parked != "":
				want["parked"] = true
			default:
				want["partition"] = true
			}
		}
		for idx, in := range where {
			if in != want[idx] {
				t.Errorf("%s: job %s is %s but in %s = %v: half-moved", what, id, j.state, idx, in)
			}
		}
	}
}

// checkCountsOf compares each queue's counts with its jobs' states; a job that cannot be
// read counts as it was in healthy (scripts leave the counts of a parked job alone).
// Queues in skipQueues (a corrupted counts key) are not compared.
func checkCountsOf(t testing.TB, ctx context.Context, s *headgate.Store, what string, jobs, healthy map[string]jobView, skipQueues map[string]bool) {
	t.Helper()
	want := map[string]map[string]int64{}
	for id, j := range jobs {
		if !j.readable {
			j = healthy[id]
		}
		if j.queue == "" {
			continue
		}
		if want[j.queue] == nil {
			want[j.queue] = map[string]int64{}
		}
		if j.held == "1" {
			want[j.queue]["held"]++ // counted apart from available
			continue
		}
		want[j.queue][j.state]++
	}
	for q, w := range want {
		if skipQueues[q] {
			continue
		}
		got, err := s.Client().HGetAll(ctx, nsKey(s, "q:"+q+":counts")).Result()
		if err != nil {
			t.Errorf("%s: counts of %s: %v", what, q, err)
			continue
		}
		for _, state := range headgate.States {
			n, _ := strconv.ParseInt(got[string(state)], 10, 64)
			if n != w[string(state)] {
				t.Errorf("%s: queue %s counts %d %s, but %d jobs are %s", what, q, n, state, w[string(state)], state)
			}
		}
	}
}

// assertCorruptionSafe runs c on its healthy state, then on the state with each
// corruption of each selected key, and checks the outcomes described at the top of this
// file. It leaves the namespace empty.
func assertCorruptionSafe(t testing.TB, s *headgate.Store, c corruptCheck) {
	t.Helper()
	rdb := s.Client()
	prefix := nsKey(s, "")
	build := func() context.Context {
		ctx := ctxFor(t)
		wipeNamespace(t, ctx, s)
		ctx = freeze(t, s)
		c.setup(t, ctx, s)
		return ctx
	}

	// The healthy baseline: the call succeeds, moves something, and the checker agrees
	// with it (a checker that flags healthy runs would prove nothing).
	ctx := build()
	healthy := viewJobs(t, ctx, s)
	var targets []string
	for _, k := range namespaceKeys(t, ctx, s) {
		name := strings.TrimPrefix(k, prefix)
		if name != "clock" && c.keys(name) {
			targets = append(targets, name)
		}
	}
	if len(targets) == 0 {
		t.Fatalf("corruption check selects no key of the built state")
	}
	var plan []corruption
	for _, name := range targets {
		plan = append(plan, corruptionsOf(t, ctx, rdb, prefix, name)...)
	}
	before := snapshot(t, ctx, s)
	if err := c.call(ctx, s); err != nil {
		t.Fatalf("healthy call: %v", err)
	}
	if snapshot(t, ctx, s) == before {
		t.Fatalf("healthy call changed nothing: the setup does not exercise it")
	}
	checkIndexed(t, "healthy", viewJobs(t, ctx, s), readIndexes(t, ctx, s), nil)
	checkCountsOf(t, ctx, s, "healthy", viewJobs(t, ctx, s), healthy, nil)

	for _, cor := range plan {
		what := cor.String()
		ctx := build()
		if err := cor.apply(ctx, rdb, prefix+cor.key); err != nil {
			t.Fatalf("%s: corrupt: %v", what, err)
		}
		before := snapshot(t, ctx, s)
		err := c.call(ctx, s)
		if err != nil {
			if after := snapshot(t, ctx, s); after != before {
				t.Errorf("%s: call failed with %v after writing:\nbefore:\n%s\nafter:\n%s", what, err, before, after)
			}
			var ce *headgate.CorruptError
			if errors.As(err, &ce) && ce.Reason == "" {
				t.Errorf("%s: corrupt error without a reason: %v", what, err)
			}
			continue
		}
		corruptedID, isJob := strings.CutPrefix(cor.key, "job:")
		parked, perr := s.CorruptJobs(ctx)
		if perr != nil {
			t.Fatalf("%s: corrupt jobs: %v", what, perr)
		}
		for id, reason := range parked {
			if !isJob || id != corruptedID {
				t.Errorf("%s: parked job %s (%q), which was not corrupted", what, id, reason)
			}
			if reason == "" {
				t.Errorf("%s: parked job %s without a reason", what, id)
			}
		}
		if isJob && c.mustPark != nil && c.mustPark(cor.key, cor.field) {
			if _, ok := parked[corruptedID]; !ok {
				t.Errorf("%s: call succeeded without parking the corrupt job", what)
			}
		}
		skip := map[string]bool{}
		if isJob {
			skip[corruptedID] = true
		}
		skipQueues := map[string]bool{}
		if q, ok := strings.CutPrefix(cor.key, "q:"); ok && strings.HasSuffix(q, ":counts") {
			skipQueues[strings.TrimSuffix(q, ":counts")] = true
		}
		jobs := viewJobs(t, ctx, s)
		checkIndexed(t, what, jobs, readIndexes(t, ctx, s), skip)
		checkCountsOf(t, ctx, s, what, jobs, healthy, skipQueues)
		if c.progressed != nil {
			t.Logf("%s: checking the other jobs progressed", what)
			c.progressed(t, ctx, s, cor.key)
		}
	}
	wipeNamespace(t, ctxFor(t), s)
}

// parksOn is a mustPark for a call that reads the numeric job fields listed: a corrupt
// job hash, or one of those fields corrupted, must be parked.
func parksOn(fields ...string) func(string, string) bool {
	return func(_, field string) bool { return field == "" || slices.Contains(fields, field) }
}

// loadJobNumbers are the numeric fields of JOB_FIELDS in lua/lib.lua, which load_job reads.
var loadJobNumbers = []string{"prio", "sched", "ret", "uwin", "attempt", "maxa", "crash", "charge", "fence"}

// othersIn is a progressed check that each of ids but the corrupted job is in state.
func othersIn(state headgate.State, ids ...string) func(testing.TB, context.Context, *headgate.Store, string) {
	return func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
		for _, id := range ids {
			if "job:"+id != corrupted {
				wantState(t, ctx, s, id, state)
			}
		}
	}
}

// holderCallCorrupt checks a write of the holder of one running job (checkpoint, output,
// progress): a corrupt job hash, output or progress key refuses it with nothing written.
// An earlier output and progress exist, so their keys are corrupted too.
func holderCallCorrupt(call func(ctx context.Context, s *headgate.Store, l headgate.LeaseRef) error) func(*testing.T, *headgate.Store) {
	return func(t *testing.T, s *headgate.Store) {
		var lease headgate.LeaseRef
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustEnqueue(t, ctx, s, job("a"))
				c := admitOne(t, ctx, s)
				lease = c.LeaseRef()
				if _, err := s.WriteOutput(ctx, lease, headgate.Blob{SchemaVersion: 1, Bytes: []byte("first")}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.WriteProgress(ctx, lease, headgate.Progress{Current: 1, Total: 3}); err != nil {
					t.Fatal(err)
				}
				advance(t, ctx, s, time.Second)
			},
			keys: keysNamed("job:", "output:", "progress:"),
			call: func(ctx context.Context, s *headgate.Store) error { return call(ctx, s, lease) },
		})
	}
}

// operatorCorruptCheck runs call (a verb on job "x" of the state setup builds) under each
// corruption keys selects; when the corrupted key is not x's own, x must end in want.
//
// The operator verbs (retry, edit, delete) read the job, then the keys of the state it
// leaves and enters. Each corruption of each of those keys either refuses the call with
// nothing written or, for the job's own data, parks the job (the verb then returns
// *JobParkedError, which the harness counts as the call's success: it wrote the parking).
// The verbs read the numeric job fields load_job reads (loadJobNumbers); a bad weight,
// which they do not read, leaves the job usable.
func operatorCorruptCheck(keys func(string) bool, setup func(t testing.TB, ctx context.Context, s *headgate.Store),
	call func(ctx context.Context, s *headgate.Store) error, want headgate.State) corruptCheck {
	return corruptCheck{
		setup: setup,
		keys:  keys,
		call: func(ctx context.Context, s *headgate.Store) error {
			err := call(ctx, s)
			if p := (*headgate.JobParkedError)(nil); errors.As(err, &p) {
				return nil
			}
			return err
		},
		progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
			if corrupted != "job:x" {
				wantState(t, ctx, s, "x", want)
			}
		},
		mustPark: func(corrupted, field string) bool {
			return corrupted == "job:x" && (field == "" || slices.Contains(loadJobNumbers, field))
		},
	}
}
