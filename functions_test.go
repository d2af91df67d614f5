package headgate_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// scriptCalls returns how many FCALL, EVALSHA and EVAL commands the server ran.
func scriptCalls(t *testing.T, rdb *redis.Client) (fcall, evalsha, eval int) {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`cmdstat_(fcall|evalsha|eval):calls=(\d+)`).FindAllStringSubmatch(info, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatal(err)
		}
		switch m[1] {
		case "fcall":
			fcall = n
		case "evalsha":
			evalsha = n
		case "eval":
			eval = n
		}
	}
	return fcall, evalsha, eval
}

func resetStats(t *testing.T, rdb *redis.Client) {
	t.Helper()
	if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

// deniedTimes returns how often the server refused user each thing (ACL LOG).
func deniedTimes(t *testing.T, rdb *redis.Client, user string) map[string]int64 {
	t.Helper()
	entries, err := rdb.ACLLog(context.Background(), 1000).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range entries {
		if e.Username == user {
			out[e.Reason+" "+e.Object] += e.Count
		}
	}
	return out
}

// available returns how many jobs of the default queue are available.
func available(t *testing.T, s *headgate.Store) int64 {
	t.Helper()
	stats, err := s.QueueStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stats {
		if st.Queue == headgate.QueueDefault {
			return st.Counts[headgate.StateAvailable]
		}
	}
	return 0
}

// A store on Redis 7 runs FCALL; after FUNCTION FLUSH (as a restart without persistence,
// or a failover to a replica that never had the library) its next call finds no function,
// loads the library and runs once: the job is there once. The durable path does the same
// with WAIT in its pipeline.
func TestFunctionsReloadAfterFlush(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "flush"})
	if err != nil {
		t.Fatal(err)
	}
	durable, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "flush", DurableReplicas: 1,
		DurableTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	resetStats(t, rdb)
	if _, err := s.Enqueue(ctx, headgate.Envelope{ID: "a", Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	if f, es, e := scriptCalls(t, rdb); f != 2 || es+e != 0 {
		t.Errorf("first enqueue: %d FCALL, %d EVALSHA, %d EVAL; want 2 FCALL (not found, loaded, again), no EVAL", f, es, e)
	}
	for id, st := range map[string]*headgate.Store{"b": s, "durable": durable} {
		if err := rdb.FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		resetStats(t, rdb)
		_, err := st.Enqueue(ctx, headgate.Envelope{ID: id, Kind: "k"})
		// No replica acknowledges the durable store's write.
		if st == durable && !errors.As(err, new(*headgate.NotDurableError)) || st == s && err != nil {
			t.Fatalf("enqueue %s after FUNCTION FLUSH: %v", id, err)
		}
		if f, es, e := scriptCalls(t, rdb); f != 2 || es+e != 0 {
			t.Errorf("enqueue %s after FUNCTION FLUSH: %d FCALL, %d EVALSHA, %d EVAL; want 2 FCALL", id, f, es, e)
		}
	}
	if n := available(t, s); n != 3 {
		t.Errorf("%d jobs available, want 3: each enqueue ran once", n)
	}
	libs, err := headgate.Functions(ctx, rdb)
	if err != nil || len(libs) != 1 || !libs[0].Current || !strings.HasPrefix(libs[0].Name, "hg_enqueue_") {
		t.Errorf("Functions = %+v, %v; want this build's enqueue library", libs, err)
	}
}

// ScriptsEval never calls or loads a function.
func TestFunctionsForcedEval(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "eval", Scripts: headgate.ScriptsEval})
	if err != nil {
		t.Fatal(err)
	}
	resetStats(t, rdb)
	for _, id := range []string{"a", "b"} {
		if _, err := s.Enqueue(ctx, headgate.Envelope{ID: id, Kind: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	if f, es, e := scriptCalls(t, rdb); f != 0 || es != 2 || e != 1 {
		t.Errorf("%d FCALL, %d EVALSHA, %d EVAL; want 0, 2 (one NOSCRIPT), 1", f, es, e)
	}
	if libs, err := headgate.Functions(ctx, rdb); err != nil || len(libs) != 0 {
		t.Errorf("Functions = %+v, %v; want none", libs, err)
	}
	if _, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "eval", Scripts: "lua"}); !errors.As(err, new(*headgate.InvalidError)) {
		t.Errorf("NewStore with Scripts \"lua\" = %v, want *InvalidError", err)
	}
}

// A user refused FUNCTION LOAD (ACLRules's) or FCALL itself falls back to EVAL at the
// first refusal, and is refused nothing more; once an operator loads the functions, a
// new client of a user who may call them runs FCALL.
func TestFunctionsNoPerm(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	store := func(user string) *headgate.Store {
		t.Helper()
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: user, Password: "pw"})
		t.Cleanup(func() { _ = c.Close() })
		s, err := headgate.NewStore(c, &headgate.StoreConfig{Namespace: user})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct{ user, rule, denied string }{
		{"hg-load", "", "command function|load"},
		{"hg-call", "-fcall", "command fcall"},
	} {
		setUser(t, ctx, admin, c.user, "pw", c.user)
		if c.rule != "" {
			if err := admin.Do(ctx, "ACL", "SETUSER", c.user, c.rule).Err(); err != nil {
				t.Fatal(err)
			}
		}
		s := store(c.user)
		for _, id := range []string{"a", "b", "c"} {
			if _, err := s.Enqueue(ctx, headgate.Envelope{ID: id, Kind: "k"}); err != nil {
				t.Fatalf("enqueue %s as %s: %v", id, c.user, err)
			}
		}
		if d := deniedTimes(t, admin, c.user); len(d) != 1 || d[c.denied] != 1 {
			t.Errorf("%s: denials %v, want %s, once", c.user, d, c.denied)
		}
		if n := available(t, s); n != 3 {
			t.Errorf("%s: %d jobs available, want 3", c.user, n)
		}
	}

	if err := headgate.LoadFunctions(ctx, admin); err != nil {
		t.Fatal(err)
	}
	resetStats(t, admin)
	if _, err := store("hg-load").Enqueue(ctx, headgate.Envelope{ID: "d", Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	if f, es, e := scriptCalls(t, admin); f != 1 || es+e != 0 {
		t.Errorf("after LoadFunctions: %d FCALL, %d EVALSHA, %d EVAL; want one FCALL", f, es, e)
	}
}

// PruneFunctions deletes libraries of other builds and keeps this build's.
func TestFunctionsPrune(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	if err := headgate.LoadFunctions(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	old := "#!lua name=hg_enqueue_000000000000\nredis.register_function('hg_enqueue_000000000000', function() return 0 end)"
	for _, code := range []string{old, "#!lua name=other\nredis.register_function('other', function() return 0 end)"} {
		if err := rdb.FunctionLoad(ctx, code).Err(); err != nil {
			t.Fatal(err)
		}
	}
	all, err := headgate.Functions(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	pruned, err := headgate.PruneFunctions(ctx, rdb)
	if err != nil || len(pruned) != 1 || pruned[0].Name != "hg_enqueue_000000000000" {
		t.Fatalf("PruneFunctions = %+v, %v; want the old enqueue library", pruned, err)
	}
	left, err := headgate.Functions(ctx, rdb)
	if err != nil || len(left) != len(all)-1 {
		t.Fatalf("Functions after pruning = %d libraries, %v; want %d", len(left), err, len(all)-1)
	}
	for _, l := range left {
		if !l.Current {
			t.Errorf("%s left after pruning", l.Name)
		}
	}
	if libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "other"}).Result(); err != nil || len(libs) != 1 {
		t.Errorf("library other = %v, %v; want it kept", libs, err)
	}
}
