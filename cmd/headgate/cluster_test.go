package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
)

// -redis may name any node of a Redis Cluster: the command reaches the namespace on
// the master of its slot, as a cluster client does, instead of failing with MOVED.
func TestCommandOnClusterNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cc, ok := redistest.SharedCluster(t).(*redis.ClusterClient)
	if !ok {
		t.Fatal("the shared cluster's client is not a *redis.ClusterClient")
	}
	ns := redistest.Namespace(t)
	store, err := headgate.NewStore(cc, &headgate.StoreConfig{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Enqueue(ctx, headgate.Envelope{ID: "j1", Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	other := otherMaster(t, cc, ns)
	for _, args := range [][]string{{"job", "j1"}, {"pause", "default"}} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"-redis", other, "-namespace", ns}, args...), &out, &errOut); code != exitOK {
			t.Errorf("headgate -redis %s %s: exit %d\nstderr:\n%s", other, strings.Join(args, " "), code, errOut.String())
		}
	}
	stats, err := store.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 || !stats[0].Paused {
		t.Errorf("queue stats after pause through another node: %+v, want default paused", stats)
	}
}

// otherMaster returns the address of a master of the cluster that does not hold the
// namespace's slot.
func otherMaster(t *testing.T, cc *redis.ClusterClient, ns string) string {
	t.Helper()
	ctx := context.Background()
	home, err := cc.MasterForKey(ctx, headgate.KeyPattern(ns))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var others []string
	if err := cc.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
		if m.Options().Addr != home.Options().Addr {
			mu.Lock()
			others = append(others, m.Options().Addr)
			mu.Unlock()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(others) == 0 {
		t.Fatal("the cluster has one master")
	}
	return others[0]
}
