package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
)

// The command serves a namespace's gauges on /metrics and stops when its context ends.
func TestServesMetrics(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(context.Background(), headgate.Envelope{ID: "j1", Kind: "k", Queue: "mail"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-redis", m.Addr(), "-namespace", "shop,other", "-addr", "127.0.0.1:0"}, io.Discard, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not listening within 10s")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`headgate_jobs{namespace="shop",queue="mail",state="available"} 1`,
		`headgate_quarantined_fingerprints{namespace="other"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestNamespaceRequired(t *testing.T) {
	err := run(context.Background(), nil, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "-namespace") || exitCode(err) != exitUsage {
		t.Errorf("run without -namespace: %v, exit %d; want a usage error (exit %d)", err, exitCode(err), exitUsage)
	}
}

// A command line the command cannot run exits 2, as the headgate command's do, -h exits
// 0 with the usage, and neither starts serving.
func TestCommandLineExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"-h"}, exitOK},
		{[]string{"-namespace", "shop", "-bogus"}, exitUsage},
		{[]string{"-namespace", "shop", "-partitions", "many"}, exitUsage},
		{[]string{"-namespace", "shop", "extra"}, exitUsage},
		{[]string{"-redis", "127.0.0.1:1"}, exitUsage},
	} {
		var stderr strings.Builder
		err := run(context.Background(), tc.args, &stderr, nil)
		if got := exitCode(err); got != tc.code {
			t.Errorf("headgate-metrics %q: %v, exit %d; want exit %d", tc.args, err, got, tc.code)
		}
		if tc.code == exitOK && !strings.Contains(stderr.String(), "-namespace") {
			t.Errorf("headgate-metrics -h printed no usage: %q", stderr.String())
		}
	}
}
