package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
)

func TestDashboardServes(t *testing.T) {
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j1", Queue: "mail"})
	rdb := redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(b.url, "redis://")})
	t.Cleanup(func() { _ = rdb.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	c := &cli{stdout: &stdout, stderr: &stderr, namespace: testNS, timeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(b.ctx)
	served := make(chan error, 1)
	go func() { served <- serveDashboard(ctx, c, rdb, ln, &dashboardOpts{rateClasses: "api, free"}) }()

	res, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || !strings.Contains(string(body), `data-queue="mail"`) {
		t.Errorf("GET /: %d %v\n%s", res.StatusCode, err, body)
	}
	res, err = http.Post("http://"+ln.Addr().String()+"/queues/mail/pause", "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("POST pause without -allow-actions: %d, want 403", res.StatusCode)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serveDashboard after cancel: %v", err)
	}
	if !strings.Contains(stdout.String(), "dashboard of namespace "+testNS+" on http://"+ln.Addr().String()+"/ (read-only)") {
		t.Errorf("stdout = %q", stdout.String())
	}
}

func TestDashboardBadAddress(t *testing.T) {
	b := setup(t)
	code, _, errOut := b.run(t, "dashboard", "-addr", "127.0.0.1:http-nope")
	if code != exitError || !strings.Contains(errOut, "dashboard:") {
		t.Errorf("dashboard -addr bad: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = b.run(t, "dashboard", "extra")
	if code != exitUsage {
		t.Errorf("dashboard extra: exit %d, stderr %q", code, errOut)
	}
}
