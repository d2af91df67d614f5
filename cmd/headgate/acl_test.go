package main

import (
	"bytes"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/headgate/headgate"
)

func TestACLCommand(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-namespace", "orders", "acl", "app", "s3cret"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want, err := headgate.ACLSetUser("app", "s3cret", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(stdout.String()); got != want {
		t.Errorf("acl printed\n%s\nwant\n%s", got, want)
	}

	// Defaults: user hg-<namespace>, a random password.
	stdout.Reset()
	if code := run([]string{"-namespace", "orders", "acl"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	f := strings.Fields(stdout.String())
	if len(f) < 6 || f[2] != "hg-orders" || !strings.HasPrefix(f[5], ">") || len(f[5]) < 17 {
		t.Errorf("acl with defaults printed %q", stdout.String())
	}
	if code := run([]string{"-namespace", "orders", "acl", "a", "b", "c"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("three arguments: exit %d, want %d", code, exitUsage)
	}
	// A user or password the line cannot hold is the command line's mistake, named.
	for _, args := range [][]string{{"bad user", "pw"}, {"app", "p w"}} {
		stderr.Reset()
		code := run(append([]string{"-namespace", "orders", "acl"}, args...), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "holds white space") {
			t.Errorf("acl %q: exit %d, stderr %q; want exit %d naming the argument", args, code, stderr.String(), exitUsage)
		}
	}
}

// acl sends Redis nothing, so it does not connect to it.
func TestACLCommandOffline(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var dialed atomic.Bool
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			dialed.Store(true)
			_ = conn.Close()
		}
	}()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-redis", ln.Addr().String(), "-timeout", "5s", "-namespace", "orders", "acl", "app", "s3cret"},
		&stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if dialed.Load() {
		t.Error("acl connected to Redis")
	}
}
