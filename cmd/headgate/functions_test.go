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
	if out := mustRun("functions"); out != "" {
		t.Errorf("functions on a fresh server printed %q, want nothing", out)
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
