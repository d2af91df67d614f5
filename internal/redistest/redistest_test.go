package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestStartClient(t *testing.T) {
	s := redistest.Start(t)
	if s.Addr() == "127.0.0.1:6379" {
		t.Fatalf("Start must never hand out the system Redis port, got %s", s.Addr())
	}
	ctx := context.Background()
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want \"v\"", got, err)
	}
}

func TestStopRestartSamePort(t *testing.T) {
	s := redistest.Start(t)
	ctx := context.Background()
	c := s.Client(t)
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	addr := s.Addr()

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := c.Ping(pingCtx).Err(); err == nil {
		t.Fatal("PING succeeded against a stopped server")
	}

	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Addr() != addr {
		t.Fatalf("Restart moved the server from %s to %s", addr, s.Addr())
	}
	// The same client reconnects on its own: go-redis drops the dead pooled
	// connection and dials the (unchanged) address again.
	if err := c.Set(ctx, "after", "2", 0).Err(); err != nil {
		t.Fatalf("SET after restart: %v", err)
	}
	if got, err := c.Get(ctx, "after").Result(); err != nil || got != "2" {
		t.Fatalf("GET after restart = %q, %v", got, err)
	}
	// Persistence is off, so a restarted server starts empty.
	if err := c.Get(ctx, "before").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET before = %v; want redis.Nil after restart", err)
	}
}

func TestShared(t *testing.T) {
	ctx := context.Background()
	a := redistest.Shared(t)
	b := redistest.Shared(t)
	if rc, ok := a.(*redis.Client); ok && rc.Options().Addr == "127.0.0.1:6379" {
		t.Fatalf("Shared must not use the system Redis on 6379")
	}
	key := t.Name() + ":k"
	if err := a.Set(ctx, key, "shared", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	got, err := b.Get(ctx, key).Result()
	if err != nil || got != "shared" {
		t.Fatalf("second Shared client GET = %q, %v; want the same server", got, err)
	}
}

func TestRequired(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "1": true, "true": true, "yes": true} {
		t.Setenv(redistest.EnvRequire, v)
		if got := redistest.Required(); got != want {
			t.Errorf("Required() with %s=%q = %v, want %v", redistest.EnvRequire, v, got, want)
		}
	}
}

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node Redis Cluster; skipped in -short mode")
	}
	start := time.Now()
	cl := redistest.StartCluster(t)
	t.Logf("cluster up in %s: %v", time.Since(start).Round(time.Millisecond), cl.Addrs())
	addrs := cl.Addrs()
	if len(addrs) != 6 {
		t.Fatalf("Addrs() = %v; want 6 nodes", addrs)
	}

	ctx := context.Background()
	cc := cl.Client(t)

	// Keys in different slots, which land on different masters.
	masters := map[string]bool{}
	for i := range 30 {
		key := fmt.Sprintf("key-%d", i)
		if err := cc.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		if got, err := cc.Get(ctx, key).Int(); err != nil || got != i {
			t.Fatalf("GET %s = %d, %v", key, got, err)
		}
		slot, err := cc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		m := cl.MasterFor(int(slot))
		if !slices.Contains(addrs, m) {
			t.Fatalf("MasterFor(%d) = %q; not a node of %v", slot, m, addrs)
		}
		masters[m] = true
	}
	if len(masters) != 3 {
		t.Fatalf("30 keys landed on masters %v; want all 3", masters)
	}

	// Fail over the master of one slot and keep using that slot.
	const key = "{failover}before"
	if err := cc.Set(ctx, key, "kept", 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
	slot, err := cc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT: %v", err)
	}
	oldMaster := cl.MasterFor(int(slot))
	start = time.Now()
	newMaster, err := cl.Failover(oldMaster)
	if err != nil {
		t.Fatalf("Failover(%s): %v", oldMaster, err)
	}
	t.Logf("failover %s -> %s in %s", oldMaster, newMaster, time.Since(start).Round(time.Millisecond))
	if newMaster == oldMaster || !slices.Contains(addrs, newMaster) {
		t.Fatalf("Failover(%s) = %q; want another node of %v", oldMaster, newMaster, addrs)
	}
	if got := cl.MasterFor(int(slot)); got != newMaster {
		t.Fatalf("MasterFor(%d) after failover = %q; want %q", slot, got, newMaster)
	}

	// A default go-redis ClusterClient does not reload its slot map on
	// "connection refused" from a dead master (only on MOVED, or every
	// ClusterStateReloadInterval, 60 s by default), so ask it to. Then allow
	// a bounded while for the rest of Redis's convergence.
	cc.ReloadState(ctx)
	var lastErr error
	deadline := time.Now().Add(10 * time.Second)
	for {
		lastErr = cc.Set(ctx, "{failover}after", "written", 0).Err()
		if lastErr == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr != nil {
		t.Fatalf("SET in failed-over slot: %v", lastErr)
	}
	// Failover waits for the replica to catch up before killing the master.
	if got, err := cc.Get(ctx, key).Result(); err != nil || got != "kept" {
		t.Fatalf("GET %s after failover = %q, %v; want the value written before", key, got, err)
	}

	// The old master comes back as a replica of the new one and resyncs.
	start = time.Now()
	if err := cl.RestartNode(oldMaster); err != nil {
		t.Fatalf("RestartNode(%s): %v", oldMaster, err)
	}
	t.Logf("%s rejoined in %s", oldMaster, time.Since(start).Round(time.Millisecond))
	if got := cl.MasterFor(int(slot)); got != newMaster {
		t.Fatalf("MasterFor(%d) after the old master rejoined = %q; want %q", slot, got, newMaster)
	}
	old := redis.NewClient(&redis.Options{Addr: oldMaster})
	defer old.Close()
	// ROLE of a replica: slave, master host, master port, state, offset.
	if role, err := old.Do(ctx, "ROLE").Slice(); err != nil || len(role) < 3 || role[0] != "slave" ||
		fmt.Sprint(role[1], ":", role[2]) != newMaster {
		t.Fatalf("ROLE of the rejoined %s = %v, %v; want a replica of %s", oldMaster, role, err, newMaster)
	}

	if err := cl.StopNode("127.0.0.1:1"); err == nil {
		t.Fatal("StopNode of a foreign address succeeded")
	}
}

func TestSharedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node Redis Cluster; skipped in -short mode")
	}
	c := redistest.SharedCluster(t)
	if _, ok := c.(*redis.ClusterClient); !ok {
		t.Fatalf("SharedCluster returned %T; want *redis.ClusterClient", c)
	}
	ctx := context.Background()
	for i := range 10 {
		key := fmt.Sprintf("%s:%d", t.Name(), i)
		if err := c.Set(ctx, key, i, time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
	}
}
