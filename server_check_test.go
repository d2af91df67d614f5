package headgate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// TestCheckServerEvictionPolicy sets each kind of maxmemory-policy on a private server and
// checks what CheckServer and worker.Start make of it: only a policy that may evict keys
// without a TTL (allkeys-*) under a memory limit is refused.
func TestCheckServerEvictionPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	cases := []struct {
		policy    string
		maxmemory string
		evicts    bool
	}{
		{"noeviction", "100mb", false},
		{"volatile-lru", "100mb", false}, // headgate's keys have no TTL
		{"volatile-ttl", "100mb", false},
		{"allkeys-lru", "100mb", true},
		{"allkeys-random", "100mb", true},
		{"allkeys-lfu", "100mb", true},
		{"allkeys-lru", "0", false}, // no limit: nothing is ever evicted
	}
	for _, c := range cases {
		name := c.policy + "/" + c.maxmemory
		if err := rdb.ConfigSet(ctx, "maxmemory-policy", c.policy).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.ConfigSet(ctx, "maxmemory", c.maxmemory).Err(); err != nil {
			t.Fatal(err)
		}
		rep, err := headgate.CheckServer(ctx, rdb)
		var ev *headgate.EvictionPolicyError
		switch {
		case c.evicts && !errors.As(err, &ev):
			t.Errorf("%s: CheckServer = %v, want *EvictionPolicyError", name, err)
		case c.evicts && (ev.Policy != c.policy || ev.Addr != srv.Addr() || ev.MaxMemory != 100<<20):
			t.Errorf("%s: error names %s %s %d, want %s %s %d", name, ev.Addr, ev.Policy, ev.MaxMemory, srv.Addr(), c.policy, 100<<20)
		case !c.evicts && err != nil:
			t.Errorf("%s: CheckServer = %v, want nil", name, err)
		}
		if rep == nil || len(rep.Nodes) != 1 || rep.Nodes[0].Policy != c.policy || rep.Nodes[0].Unknown != "" {
			t.Errorf("%s: report %+v, want one node with policy %s", name, rep, c.policy)
		}

		// worker.Start refuses such a server unless allowed to start anyway.
		for _, allow := range []bool{false, true} {
			w, err := worker.New(rdb, &worker.Config{Namespace: "evict-check", AllowEvictionPolicy: allow,
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			worker.HandleFunc(w, "noop", func(context.Context, *headgate.Claim) error { return nil })
			err = w.Start(ctx)
			refused := errors.As(err, &ev)
			if want := c.evicts && !allow; refused != want || (err != nil && !refused) {
				t.Errorf("%s, AllowEvictionPolicy %v: Start = %v, want refused %v", name, allow, err, want)
			}
			if err := w.Stop(ctx); err != nil {
				t.Errorf("%s: Stop: %v", name, err)
			}
		}
	}
}

// TestCheckServerReplica: a client of a replica (a reader endpoint, a Sentinel client
// with ReplicaOnly) is refused by CheckServer and worker.Start with *ReplicaError,
// instead of a worker that starts and then fails every call with READONLY.
func TestCheckServerReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := redistest.Start(t)
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica := redistest.StartWith(t, "--replicaof", host, port)
	if _, err := headgate.CheckServer(ctx, master.Client(t)); err != nil {
		t.Fatalf("CheckServer of the master: %v", err)
	}
	rdb := replica.Client(t)
	rep, err := headgate.CheckServer(ctx, rdb)
	var re *headgate.ReplicaError
	if !errors.As(err, &re) || re.Addr != replica.Addr() {
		t.Errorf("CheckServer of a replica = %v, want *ReplicaError naming %s", err, replica.Addr())
	}
	if rep == nil || len(rep.Nodes) != 1 || !rep.Nodes[0].Replica {
		t.Errorf("report %+v: want one node, a replica", rep)
	}
	w, err := worker.New(rdb, &worker.Config{Namespace: redistest.Namespace(t), AllowEvictionPolicy: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	worker.HandleFunc(w, "noop", func(context.Context, *headgate.Claim) error { return nil })
	if err := w.Start(ctx); !errors.As(err, &re) {
		t.Errorf("Start on a replica = %v, want *ReplicaError", err)
	}
	if err := w.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// TestCheckServerUnknown: a server that does not answer INFO memory (miniredis) is
// reported unknown, not refused, so tests on miniredis start workers as before.
func TestCheckServerUnknown(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	rep, err := headgate.CheckServer(context.Background(), rdb)
	if err != nil {
		t.Fatalf("CheckServer on miniredis: %v", err)
	}
	if len(rep.Nodes) != 1 || rep.Nodes[0].Unknown == "" {
		t.Errorf("report %+v: want one node, unknown", rep)
	}
}

// TestCheckServerCluster checks every master of a cluster.
func TestCheckServerCluster(t *testing.T) {
	t.Parallel()
	rdb := redistest.SharedCluster(t)
	ctx := context.Background()
	rep, err := headgate.CheckServer(ctx, rdb)
	if err != nil {
		t.Fatalf("CheckServer: %v", err)
	}
	var masters atomic.Int64 // ForEachMaster calls in parallel
	if err := rdb.(*redis.ClusterClient).ForEachMaster(ctx, func(context.Context, *redis.Client) error {
		masters.Add(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if int64(len(rep.Nodes)) != masters.Load() {
		t.Errorf("report has %d nodes, want the %d masters", len(rep.Nodes), masters.Load())
	}
	for _, n := range rep.Nodes {
		if n.Unknown != "" || n.Policy == "" {
			t.Errorf("node %+v: want a known policy", n)
		}
	}
}

// TestEnqueueOutOfMemory fills a private server to its maxmemory under noeviction: an
// enqueue then fails with ErrOutOfMemory and leaves the namespace exactly as it was
// (Redis refuses a script's first write when the server was out of memory as the script
// started, so a script that checks before it writes writes nothing), and succeeds again
// once memory is freed.
func TestEnqueueOutOfMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.StartWith(t, "--maxmemory-policy", "noeviction")
	rdb := srv.Client(t)
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "oom"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Enqueue(ctx, headgate.Envelope{ID: "before", Kind: "k"}); err != nil {
		t.Fatal(err)
	}

	if err := store.PauseQueue(ctx, "paused"); err != nil {
		t.Fatal(err)
	}

	// Every function loaded first (a server out of memory refuses FUNCTION LOAD).
	if err := headgate.LoadFunctions(ctx, rdb); err != nil {
		t.Fatal(err)
	}

	// The limit a little above what the server uses now, then a filler key past it.
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	used, err := strconv.ParseInt(infoValue(info, "used_memory"), 10, 64)
	if err != nil {
		t.Fatalf("used_memory in %q: %v", info, err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+(1<<20), 10)).Err(); err != nil {
		t.Fatal(err)
	}
	chunk := strings.Repeat("x", 64<<10)
	for i := 0; ; i++ {
		err := rdb.Append(ctx, "filler", chunk).Err()
		if redis.HasErrorPrefix(err, "OOM") {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i > 1000 {
			t.Fatal("64 MiB appended without reaching maxmemory")
		}
	}

	before := dumpNamespace(t, rdb, "oom")
	_, err = store.Enqueue(ctx, headgate.Envelope{ID: "during", Kind: "k"},
		headgate.Envelope{ID: "during-2", Kind: "k", Queue: "other"})
	if !errors.Is(err, headgate.ErrOutOfMemory) {
		t.Fatalf("Enqueue at maxmemory = %v, want ErrOutOfMemory", err)
	}
	t.Logf("enqueue at maxmemory: %v", err)
	if after := dumpNamespace(t, rdb, "oom"); after != before {
		t.Errorf("the refused enqueue changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := store.GetJob(ctx, "during"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Errorf("GetJob(during) = %v, want ErrJobNotFound", err)
	}
	// The read-only scripts still run: their functions carry the no-writes flag, without
	// which Redis refuses an FCALL upfront at maxmemory.
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Why(ctx, "before", nil); err != nil {
		t.Errorf("Why at maxmemory: %v", err)
	}
	page, err := store.ListJobs(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, headgate.Page{})
	if err != nil || len(page.Jobs) != 1 {
		t.Errorf("ListJobs at maxmemory = %+v, %v; want the one job", page, err)
	}
	if f, es, e := scriptCalls(t, rdb); f != 2 || es+e != 0 {
		t.Errorf("Why and ListJobs at maxmemory: %d FCALL, %d EVALSHA, %d EVAL; want 2 FCALL", f, es, e)
	}

	// The writes made without a script are refused as ErrOutOfMemory too, and write
	// nothing: a resume does not half apply (the queue resumed, its workers not woken)
	// and report a failure.
	before = dumpNamespace(t, rdb, "oom")
	for name, call := range map[string]func() error{
		"PauseQueue":      func() error { return store.PauseQueue(ctx, "default") },
		"ResumeQueue":     func() error { return store.ResumeQueue(ctx, "paused") },
		"SetEnqueueLimit": func() error { return store.SetEnqueueLimit(ctx, "default", 5) },
		"RemoveRateLimit": func() error { return store.RemoveRateLimit(ctx, "r") },
	} {
		if err := call(); !errors.Is(err, headgate.ErrOutOfMemory) {
			t.Errorf("%s at maxmemory = %v, want ErrOutOfMemory", name, err)
		}
	}
	if after := dumpNamespace(t, rdb, "oom"); after != before {
		t.Errorf("the refused writes changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	if err := rdb.Del(ctx, "filler").Err(); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := store.Enqueue(cctx, headgate.Envelope{ID: "after", Kind: "k"}); err != nil {
		t.Fatalf("Enqueue after memory was freed: %v", err)
	}
}

// dumpNamespace renders every key of the namespace with its DUMP, for byte-for-byte
// comparison.
func dumpNamespace(t *testing.T, rdb *redis.Client, ns string) string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "hg:{"+ns+"}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		d, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %x\n", k, d)
	}
	return b.String()
}

func infoValue(info, key string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == key {
			return v
		}
	}
	return ""
}
