package main

import (
	"context"
	"flag"
	"io"
	"net/url"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
)

func newTestFlagSet(c *cli) *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.globalFlags(fs)
	return fs
}

// onBackends runs fn as a parallel subtest on an embedded miniredis and on a real
// redis-server (redistest's shared ones), each in a namespace of its own with the store
// clock frozen at epoch, as setup's. The command line connects to one server, not to a
// cluster, so Redis Cluster is left out.
func onBackends(t *testing.T, fn func(t *testing.T, b *testBundle)) {
	t.Helper()
	for _, be := range redistest.Backends {
		if be.Name == "Cluster" {
			continue
		}
		t.Run(be.Name, func(t *testing.T) {
			t.Parallel()
			rdb, ok := be.Client(t).(*redis.Client)
			if !ok {
				t.Fatalf("backend %s: not a single server's client", be.Name)
			}
			ns := redistest.Namespace(t)
			store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns, CrashLimit: 1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := store.FreezeClock(ctx, epoch); err != nil {
				t.Fatal(err)
			}
			fn(t, &testBundle{ctx: ctx, url: clientURL(rdb.Options()), store: store, ns: ns})
		})
	}
}

// clientURL is the redis:// URL of a client's server, with its user, password and
// database.
func clientURL(o *redis.Options) string {
	u := url.URL{Scheme: "redis", Host: o.Addr, Path: "/" + strconv.Itoa(o.DB)}
	switch {
	case o.Password != "":
		u.User = url.UserPassword(o.Username, o.Password)
	case o.Username != "":
		u.User = url.User(o.Username)
	}
	return u.String()
}
