package main

import (
	"bytes"
	"strings"
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
}
