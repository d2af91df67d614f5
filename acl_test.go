package headgate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// TestACLCoversScriptCommands: scripts run with the caller's permissions, so every command
// a script calls must be in the ACL rules.
func TestACLCoversScriptCommands(t *testing.T) {
	t.Parallel()
	rules, err := headgate.ACLRules("ns")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in lua/: %v", err)
	}
	// A container command (OBJECT ENCODING) is allowed by its subcommand.
	call := regexp.MustCompile(`(?:rcall|redis\.call|redis\.pcall)\(\s*'([A-Za-z]+)'(?:\s*,\s*'(ENCODING)')?`)
	var missing []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			rule := "+" + strings.ToLower(m[1])
			if m[2] != "" {
				rule += "|" + strings.ToLower(m[2])
			}
			if !slices.Contains(rules, rule) && !slices.Contains(missing, rule) {
				missing = append(missing, rule)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("commands called by lua/*.lua but not allowed by ACLRules (add them to aclScriptCommands in acl.go): %v", missing)
	}
}

func TestACLRulesEscapeGlobs(t *testing.T) {
	t.Parallel()
	rules, err := headgate.ACLRules("a*b")
	if err != nil {
		t.Fatal(err)
	}
	if want := `~hg:{a\*b}:*`; !slices.Contains(rules, want) {
		t.Errorf("rules %v: want key pattern %s", rules, want)
	}
	for _, bad := range []string{"", "bad{name"} {
		if _, err := headgate.ACLRules(bad); err == nil {
			t.Errorf("ACLRules accepted namespace %q", bad)
		}
	}
	line, err := headgate.ACLSetUser("hg-orders", "s3cret", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "ACL SETUSER hg-orders reset on >s3cret ~hg:{orders}:* &hg:{orders}:* -@all +evalsha ") {
		t.Errorf("ACLSetUser = %q", line)
	}
}

// setUser creates user on rdb's server(s) with ACLRules(namespace).
func setUser(t *testing.T, ctx context.Context, rdb redis.UniversalClient, user, password, namespace string) {
	t.Helper()
	rules, err := headgate.ACLRules(namespace)
	if err != nil {
		t.Fatal(err)
	}
	args := []any{"ACL", "SETUSER", user, rules[0], "on", ">" + password}
	for _, r := range rules[1:] {
		args = append(args, r)
	}
	set := func(ctx context.Context, c *redis.Client) error { return c.Do(ctx, args...).Err() }
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachShard(ctx, set)
	} else {
		err = set(ctx, rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
}

// aclDenials returns the ACL LOG entries of user on the server(s): what it was refused.
func aclDenials(t *testing.T, ctx context.Context, rdb redis.UniversalClient, user string) []string {
	t.Helper()
	var out []string
	collect := func(ctx context.Context, c *redis.Client) error {
		entries, err := c.ACLLog(ctx, 1000).Result()
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Username == user {
				out = append(out, e.Reason+" "+e.Object)
			}
		}
		return nil
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachShard(ctx, collect)
	} else {
		err = collect(ctx, rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatalf("ACL LOG: %v", err)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

type aclArgs struct {
	N int `msgpack:"n"`
}

func (aclArgs) Kind() string { return "acl" }

// TestACLLeastPrivilege runs a worker, a producer and an inspector of namespace A as A's
// least-privilege user, on a server and on a cluster; the server refuses nothing they
// send but CLIENT UNBLOCK (left out on purpose), and the same user is refused every read
// and write of namespace B.
func TestACLLeastPrivilege(t *testing.T) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		admin := srv.Client(t)
		testACL(t, admin, func(user, password string) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: user, Password: password})
		})

		// A namespace with a glob character in its name reaches only itself.
		ctx := context.Background()
		setUser(t, ctx, admin, "hg-glob", "pw-g", "g*")
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "hg-glob", Password: "pw-g"})
		t.Cleanup(func() { _ = c.Close() })
		if err := c.Set(ctx, "hg:{g*}:clock", 1, 0).Err(); err != nil {
			t.Errorf("SET in namespace g* as its user: %v", err)
		}
		if err := c.Set(ctx, "hg:{gx}:clock", 1, 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("SET in namespace gx as the user of g* = %v, want NOPERM", err)
		}
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		admin := redistest.SharedCluster(t)
		addrs := admin.(*redis.ClusterClient).Options().Addrs
		testACL(t, admin, func(user, password string) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Username: user, Password: password})
		})
	})
}

func testACL(t *testing.T, admin redis.UniversalClient, connect func(user, password string) redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	nsA, nsB := "acl-a-"+suffix, "acl-b-"+suffix
	userA := "hg-" + nsA
	setUser(t, ctx, admin, userA, "pw-a", nsA)
	rdb := connect(userA, "pw-a")
	t.Cleanup(func() { _ = rdb.Close() })

	// Namespace B has a job, written by the admin.
	storeB, err := headgate.NewStore(admin, &headgate.StoreConfig{Namespace: nsB})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storeB.Enqueue(ctx, headgate.Envelope{ID: "b1", Kind: "acl"}); err != nil {
		t.Fatal(err)
	}

	// The operator loads the functions, which A's user may call but not load.
	if err := headgate.LoadFunctions(ctx, admin); err != nil {
		t.Fatal(err)
	}

	// A's worker, producer and inspector, all as A's user.
	w, err := worker.New(rdb, &worker.Config{Namespace: nsA, Concurrency: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan string, 10)
	started, cancelled := make(chan string, 1), make(chan string, 1)
	worker.Handle(w, func(ctx context.Context, j *worker.Job[aclArgs]) error {
		if j.Args.N == 2 {
			// Runs until an operator cancels it: the cancel reaches the worker on the
			// namespace's channel.
			started <- j.ID
			<-ctx.Done()
			cancelled <- j.ID
			return ctx.Err()
		}
		if err := worker.WriteProgress(ctx, 1, 1, "done"); err != nil {
			return err
		}
		ran <- j.ID
		return nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatalf("worker.Start as %s: %v", userA, err)
	}
	producer, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: nsA, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	res, err := producer.Enqueue(ctx, aclArgs{N: 1}, nil)
	if err != nil {
		t.Fatalf("Enqueue as %s: %v", userA, err)
	}
	select {
	case id := <-ran:
		if id != res.ID {
			t.Fatalf("ran %s, want %s", id, res.ID)
		}
	case <-ctx.Done():
		t.Fatal("the job was not run")
	}
	insp, err := inspector.New(rdb, &inspector.Config{Namespace: nsA})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := insp.Stats(ctx); err != nil {
		t.Errorf("Stats as %s: %v", userA, err)
	}
	if _, err := insp.ListJobs(ctx, inspector.JobFilter{Queue: "default", State: headgate.StateAvailable}, inspector.Page{}); err != nil {
		t.Errorf("ListJobs as %s: %v", userA, err)
	}
	if err := insp.Pause(ctx, "default"); err != nil {
		t.Errorf("Pause as %s: %v", userA, err)
	}
	// The listings of workflows, deployments and schedules (headgate wf list, wf
	// deployments, cron list) read sorted sets in member order.
	if _, _, err := insp.Workflows(ctx, headgate.WorkflowFilter{}, "", 10); err != nil {
		t.Errorf("Workflows as %s: %v", userA, err)
	}
	if _, _, err := insp.Workflows(ctx, headgate.WorkflowFilter{WorkflowType: "checkout"}, "", 10); err != nil {
		t.Errorf("Workflows of a type as %s: %v", userA, err)
	}
	if _, _, err := insp.WorkerDeployments(ctx, "", 10); err != nil {
		t.Errorf("WorkerDeployments as %s: %v", userA, err)
	}
	if _, _, err := insp.Schedules(ctx, "", 10); err != nil {
		t.Errorf("Schedules as %s: %v", userA, err)
	}
	if err := insp.Resume(ctx, "default"); err != nil {
		t.Errorf("Resume as %s: %v", userA, err)
	}
	// Cancel a running job: the cancel script publishes, the worker hears it.
	long, err := producer.Enqueue(ctx, aclArgs{N: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the long job did not start")
	}
	if err := insp.Cancel(ctx, long.ID); err != nil {
		t.Fatalf("Cancel as %s: %v", userA, err)
	}
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the worker did not hear the cancel")
	}
	if err := w.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	// Stop returns once the worker's acks are confirmed: the first job is completed
	// (retained), its ack allowed.
	if d, err := insp.Job(ctx, res.ID); err != nil || d.Job.State != headgate.StateCompleted {
		t.Errorf("Job %s as %s = %+v, %v; want completed", res.ID, userA, d, err)
	}

	// Everything A's clients sent was allowed, but CLIENT UNBLOCK at Stop (the worker
	// then closes its wait connection) and, on Redis 7.2+, go-redis's CLIENT SETINFO.
	for _, d := range aclDenials(t, ctx, admin, userA) {
		if d != "command client|unblock" && d != "command client|setinfo" {
			t.Errorf("the server refused %s something headgate sends: %s", userA, d)
		}
	}

	// Namespace B is out of reach: raw reads and writes, and a store on it.
	isNoPerm := func(err error) bool { return err != nil && strings.Contains(err.Error(), "NOPERM") }
	keyB := "hg:{" + nsB + "}:job:b1"
	if err := rdb.HGetAll(ctx, keyB).Err(); !isNoPerm(err) {
		t.Errorf("HGETALL %s as %s = %v, want NOPERM", keyB, userA, err)
	}
	if err := rdb.HSet(ctx, keyB, "state", "completed").Err(); !isNoPerm(err) {
		t.Errorf("HSET %s as %s = %v, want NOPERM", keyB, userA, err)
	}
	storeBasA, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: nsB})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storeBasA.Enqueue(ctx, headgate.Envelope{ID: "b2", Kind: "acl"}); !isNoPerm(err) {
		t.Errorf("Enqueue into %s as %s = %v, want NOPERM", nsB, userA, err)
	}
	if _, err := storeBasA.GetJob(ctx, "b1"); !isNoPerm(err) {
		t.Errorf("GetJob in %s as %s = %v, want NOPERM", nsB, userA, err)
	}
	if _, err := storeBasA.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"default"},
		Capacity: 1, Lease: time.Second}); !isNoPerm(err) {
		t.Errorf("Admit in %s as %s = %v, want NOPERM", nsB, userA, err)
	}
	if _, err := storeB.GetJob(ctx, "b2"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Errorf("b2 in %s: %v, want not found", nsB, err)
	}
	if j, err := storeB.GetJob(ctx, "b1"); err != nil || j.State != headgate.StateAvailable {
		t.Errorf("b1 in %s: %v %v, want available and untouched", nsB, j, err)
	}
	// Nor can it reach past the namespace with an admin command.
	if err := rdb.Do(ctx, "CONFIG", "GET", "maxmemory").Err(); !isNoPerm(err) {
		t.Errorf("CONFIG GET as %s = %v, want NOPERM", userA, err)
	}
}

// TestACLReadmeLine keeps the README's ACL SETUSER line true.
func TestACLReadmeLine(t *testing.T) {
	t.Parallel()
	line, err := headgate.ACLSetUser("hg-orders", "PASSWORD", "orders")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "\n"+line+"\n") {
		t.Errorf("README.md does not show the current rules; want the line\n%s", line)
	}
}
