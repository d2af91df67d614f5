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
	shopWithOneJob(t, m.Addr(), "")
	body := scrapeOnce(t, m.Addr(), "shop,other")
	for _, want := range []string{
		`headgate_jobs{namespace="shop",queue="mail",state="available"} 1`,
		`headgate_quarantined_fingerprints{namespace="other"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
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

// -redis takes a redis:// URL with the password of a server that asks for one, as the
// headgate command's -redis does; a URL it cannot read is a usage error that does not
// print the password.
func TestRedisURLWithPassword(t *testing.T) {
	m := miniredis.RunT(t)
	m.RequireAuth("s3cret")
	shopWithOneJob(t, m.Addr(), "s3cret")
	body := scrapeOnce(t, "redis://:s3cret@"+m.Addr()+"/0", "shop")
	if want := `headgate_jobs{namespace="shop",queue="mail",state="available"} 1`; !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %q:\n%s", want, body)
	}

	bounded, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	err := run(bounded, []string{"-redis", "redis://:s3cret@" + m.Addr() + "/nodb", "-namespace", "shop", "-addr", "127.0.0.1:0"}, io.Discard, nil)
	if exitCode(err) != exitUsage || err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "-redis") {
		t.Errorf("a bad -redis URL: %v, exit %d; want a usage error naming -redis without the password", err, exitCode(err))
	}
	// A URL that does not parse: the parser's error quotes it whole.
	err = run(bounded, []string{"-redis", "redis://:s3cret@127.0.0.1:notaport", "-namespace", "shop", "-addr", "127.0.0.1:0"}, io.Discard, nil)
	if exitCode(err) != exitUsage || err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "-redis") {
		t.Errorf("a -redis URL that does not parse: %v, exit %d; want a usage error naming -redis without the password", err, exitCode(err))
	}
}

// scrapeOnce runs the command on redisArg and namespaces until it listens, reads its
// /metrics once, then cancels it and checks that it returned without an error.
func scrapeOnce(t *testing.T, redisArg, namespaces string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-redis", redisArg, "-namespace", namespaces, "-addr", "127.0.0.1:0"}, io.Discard, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not listening within 10s")
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
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
	return string(body)
}

// shopWithOneJob enqueues job j1 of queue mail into namespace shop on the server at addr.
func shopWithOneJob(t *testing.T, addr, password string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(context.Background(), headgate.Envelope{ID: "j1", Kind: "k", Queue: "mail"}); err != nil {
		t.Fatal(err)
	}
}
