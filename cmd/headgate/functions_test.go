package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
)

// functions load puts this build's libraries on the server, functions lists them as
// current, and prune keeps them.
func TestFunctionsCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	mustRun := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"-redis", srv.Addr(), "-namespace", "fn"}, args...), &stdout, &stderr); code != exitOK {
			t.Fatalf("headgate %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
		return stdout.String()
	}
	// None yet: one line says so, and -json an empty list.
	if out, want := mustRun("functions"), "no headgate function libraries on "+srv.Addr()+
		" (a client loads its build's on its first call; headgate functions load loads them now)\n"; out != want {
		t.Errorf("functions on a fresh server printed %q, want %q", out, want)
	}
	var none map[string]json.RawMessage
	if err := json.Unmarshal([]byte(mustRun("functions", "-json")), &none); err != nil {
		t.Fatal(err)
	}
	if libs, ok := none["libraries"]; !ok || string(libs) != "[]" || len(none) != 1 {
		t.Errorf("functions -json on a fresh server = %v, want {\"libraries\": []}", none)
	}
	var loaded struct{ Libraries []headgate.FunctionLibrary }
	if err := json.Unmarshal([]byte(mustRun("functions", "load", "-json")), &loaded); err != nil {
		t.Fatal(err)
	}
	if len(loaded.Libraries) < 2 {
		t.Fatalf("functions load listed %+v, want every script's library", loaded.Libraries)
	}
	for _, l := range loaded.Libraries {
		if !l.Current || !strings.HasPrefix(l.Name, headgate.FunctionPrefix) {
			t.Errorf("library %+v: want a current hg_ one", l)
		}
	}
	if out := mustRun("functions"); strings.Count(out, "(current)") != len(loaded.Libraries) {
		t.Errorf("functions printed\n%s\nwant %d current libraries", out, len(loaded.Libraries))
	}
	if out := mustRun("functions", "prune"); out != "pruned 0 libraries\n" {
		t.Errorf("functions prune printed %q, want nothing pruned", out)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-redis", srv.Addr(), "-namespace", "fn", "functions", "drop"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("functions drop: exit %d, want %d", code, exitUsage)
	}
}

// A least-privilege user refused by Redis (NOPERM) is told why: the user of another
// namespace (a mistyped -namespace), or an administrator's command such as functions.
func TestNoPermSaysWhy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	line, err := headgate.ACLSetUser("hg-orders", "s3cret", "orders")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(line)
	cmd := make([]any, len(args))
	for i, a := range args {
		cmd[i] = a
	}
	if err := rdb.Do(t.Context(), cmd...).Err(); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	url := "redis://hg-orders:s3cret@" + srv.Addr()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-namespace", "ordres", "stats"}, `NOPERM this user has no permissions to access one of the keys used as arguments ` +
			`(the Redis user may not reach namespace ordres: a user of headgate acl reaches one namespace's keys; is -namespace right?)`},
		{[]string{"-namespace", "orders", "functions"}, `(the Redis user may not run that command: headgate functions needs an ` +
			`administrator; otherwise compare the user's ACL with headgate acl's line)`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"-redis", url}, c.args...), &stdout, &stderr); code != exitError || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("headgate %v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), exitError, c.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-redis", url, "-namespace", "orders", "stats"}, &stdout, &stderr); code != exitOK {
		t.Errorf("stats of the user's own namespace: exit %d, %s", code, stderr.String())
	}
}
