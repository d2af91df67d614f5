package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := runDemo([]string{"-noisy", "300", "-quiet", "10", "-tenants", "2", "-every", "1ms", "-work", "0",
		"-workers", "2", "-concurrency", "4", "-progress", "100ms", "-timeout", "60s"}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	requireContains(t, out.String(),
		"headgate demo on an embedded miniredis",
		"done 320/320",
		"throughput   320 jobs in",
		"retries      15 first attempts failed",
		"(fingerprint import:bad.csv) after 2 worker crashes; 3 siblings held, 1 new enqueue(s) refused",
		"acme     300   300",
		"globex   10    10",
		"initech  10    10",
		"imports  active  -      3",
	)
	// The summary's last hour counts what the run did, from the live counters, not the
	// series duty's last sample of the minute (taken as the workers started).
	for line := range strings.Lines(out.String()) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "default" && f[1] == "active" {
			if done, failed := f[len(f)-2], f[len(f)-1]; done != "320" || failed != "15" {
				t.Errorf("summary's default queue completed %s and failed %s in the last hour, want 320 and 15:\n%s", done, failed, line)
			}
			return
		}
	}
	t.Errorf("summary has no row of the default queue:\n%s", out.String())
}

func TestDemoUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"demo", "-tenants", "0"}, exitUsage, "-tenants 0 is outside"},
		{[]string{"demo", "extra"}, exitUsage, "unexpected arguments"},
		// Global flags given before the command reach the demo.
		{[]string{"-namespace", "n", "demo", "-h"}, exitOK, "usage: headgate demo"},
		{[]string{"-redis", "http://x", "demo"}, exitError, "bad -redis"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("headgate %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, errOut.String(), tc.code, tc.want)
		}
	}
}

// The demo on a server whose URL has a password prints the URL without it: stdout goes
// to terminals and logs.
func TestDemoHidesPassword(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	mr.RequireAuth("hunter2")
	var out, errOut bytes.Buffer
	code := runDemo([]string{"-redis", "redis://:hunter2@" + mr.Addr(), "-noisy", "20", "-quiet", "2", "-tenants", "1",
		"-every", "1ms", "-work", "0", "-workers", "1", "-progress", "1s", "-timeout", "60s"}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if strings.Contains(out.String()+errOut.String(), "hunter2") {
		t.Errorf("the demo printed the password:\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	requireContains(t, out.String(), "headgate demo on redis redis://:xxxxx@"+mr.Addr(),
		"inspect it: headgate -redis redis://:xxxxx@"+mr.Addr()+" -namespace ")
}

// The demo on a server that the workers would refuse (one that evicts jobs at its memory
// limit) fails before it enqueues anything there, rather than leave its backlog behind.
func TestDemoRefusesEvictingServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	for k, v := range map[string]string{"maxmemory": "100mb", "maxmemory-policy": "allkeys-lru"} {
		if err := rdb.ConfigSet(ctx, k, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ns := redistest.Namespace(t)
	var out, errOut bytes.Buffer
	code := runDemo([]string{"-redis", "redis://" + srv.Addr(), "-namespace", ns, "-noisy", "50", "-quiet", "2"}, &out, &errOut)
	if code != exitError || !strings.Contains(errOut.String(), "maxmemory-policy allkeys-lru") {
		t.Errorf("demo on an evicting server: exit %d, stderr %q; want exit %d naming the policy", code, errOut.String(), exitError)
	}
	keys, err := rdb.Keys(ctx, headgate.KeyPattern(ns)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("the refused demo left %d keys in its namespace: %v", len(keys), keys)
	}
}

// The demo runs on a Redis Cluster given any node of it.
func TestDemoOnClusterNode(t *testing.T) {
	t.Parallel()
	cc, ok := redistest.SharedCluster(t).(*redis.ClusterClient)
	if !ok {
		t.Fatal("the shared cluster's client is not a *redis.ClusterClient")
	}
	ns := redistest.Namespace(t)
	var out, errOut bytes.Buffer
	code := runDemo([]string{"-redis", otherMaster(t, cc, ns), "-namespace", ns, "-noisy", "40", "-quiet", "2",
		"-tenants", "1", "-every", "1ms", "-work", "0", "-workers", "1", "-progress", "1s", "-timeout", "60s"}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("demo on a cluster node: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	requireContains(t, out.String(), "done 42/42")
}
