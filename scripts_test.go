package headgate

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// scriptSources returns lua/*.lua by name ("ack", ..., and "lib").
func scriptSources(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(luaFiles, "lua", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := luaFiles.ReadFile(path)
		out[strings.TrimSuffix(strings.TrimPrefix(path, "lua/"), ".lua")] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func header(src string) string {
	end := strings.Index(src, "]]")
	if !strings.HasPrefix(src, "--[[") || end < 0 {
		return ""
	}
	return src[:end]
}

// TestLuaHeaders checks that every script opens with its contract (purpose, KEYS, ARGV,
// replies, cost) and that the KEYS it documents are what its Go caller passes.
func TestLuaHeaders(t *testing.T) {
	passed := len(newScriptRunner(nil, newKeys("ns").Prefix(), ScriptsAuto).keys)
	for name, src := range scriptSources(t) {
		h := header(src)
		if h == "" {
			t.Errorf("%s.lua does not open with a --[[ ]] header", name)
			continue
		}
		if name == "lib" {
			continue
		}
		if !strings.HasPrefix(h, "--[[\n"+name+".lua: ") {
			t.Errorf("%s.lua header does not start with its name and purpose", name)
		}
		for _, section := range []string{"ARGV", "Replies", "Cost"} {
			if !strings.Contains(h, "\n"+section) {
				t.Errorf("%s.lua header has no %s section", name, section)
			}
		}
		documented := len(regexp.MustCompile(`(?m)^KEYS\[\d+\]`).FindAllString(h, -1))
		if documented != passed {
			t.Errorf("%s.lua header documents %d KEYS, its caller passes %d", name, documented, passed)
		}
		if used := regexp.MustCompile(`KEYS\[(\d+)\]`).FindAllStringSubmatch(src[len(h):], -1); len(used) > 0 {
			for _, u := range used {
				if u[1] != "1" {
					t.Errorf("%s.lua reads KEYS[%s], beyond what its caller passes", name, u[1])
				}
			}
		}
	}
}

// TestLuaScriptsAreBounded rejects commands that walk a whole key space or collection.
// Every loop in a script runs over ARGV or over a range capped by an argument.
func TestLuaScriptsAreBounded(t *testing.T) {
	unbounded := regexp.MustCompile(`'(KEYS|SCAN|SMEMBERS|HKEYS|HVALS|ZRANGEBYLEX)'|'[A-Z]*RANGE[A-Z]*', .*, 0, -1\)`)
	limited := regexp.MustCompile(`'ZRANGEBYSCORE', .*'LIMIT', 0, [a-z_]+\)`)
	for name, src := range scriptSources(t) {
		body := src[len(header(src)):]
		if m := unbounded.FindString(body); m != "" {
			t.Errorf("%s.lua: unbounded command %s", name, m)
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.Contains(line, "'ZRANGEBYSCORE'") && !limited.MatchString(line) {
				t.Errorf("%s.lua: ZRANGEBYSCORE without a LIMIT from an argument: %s", name, strings.TrimSpace(line))
			}
		}
	}
}

// libDefinitions returns the lib.lua definitions whose names want picks, with everything
// they include, as a script would get them: the whole lib.lua has more locals than one
// Lua chunk may hold.
func libDefinitions(t *testing.T, want func(name string) bool) string {
	t.Helper()
	src, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseLib(string(src))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range l.defined {
		if want(n) {
			names = append(names, n)
		}
	}
	in, err := l.closure("the test", names)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, d := range l.defs {
		if in[i] {
			b.WriteString(d.text)
		}
	}
	return b.String()
}

// TestLuaKeysMatchGo holds lua/lib.lua's key builders to keys.go.
func TestLuaKeysMatchGo(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	k := newKeys("ns:1")
	// Each row pairs a lib.lua key builder with its keys.go function, on the same arguments.
	keys := []struct{ lua, golang string }{
		{`K.job(P, 'id:1')`, k.Job("id:1")},
		{`K.errors(P, 'id:1')`, k.Errors("id:1")},
		{`K.result(P, 'id:1')`, k.Result("id:1")},
		{`K.output(P, 'id:1')`, k.Output("id:1")},
		{`K.progress(P, 'id:1')`, k.Progress("id:1")},
		{`K.queues(P)`, k.Queues()},
		{`K.counts(P, 'q')`, k.Counts("q")},
		{`K.ring(P, 'q')`, k.Ring("q")},
		{`K.ring_state(P, 'q')`, k.RingState("q")},
		{`K.partition(P, 'q', 't:1')`, k.Partition("q", "t:1")},
		{`K.pinned_ring(P, 'q', 'w')`, k.PinnedRing("q", "w")},
		{`K.pinned_ring_state(P, 'q', 'w')`, k.PinnedRingState("q", "w")},
		{`K.pinned_partition(P, 'q', 'w', 't:1')`, k.PinnedPartition("q", "w", "t:1")},
		{`K.wake(P, 'q')`, k.Wake("q")},
		{`K.scheduled(P)`, k.Scheduled()},
		{`K.leases(P)`, k.Leases()},
		{`K.retained(P)`, k.Retained()},
		{`K.unique(P)`, k.Unique()},
		{`K.throttle(P)`, k.Throttle()},
		{`K.throttle_expiry(P)`, k.ThrottleExpiry()},
		{`K.quarantine(P)`, k.Quarantine()},
		{`K.held(P, 'fp:1')`, k.Held("fp:1")},
		{`K.paused(P)`, k.Paused()},
		{`K.limits(P)`, k.Limits()},
		{`K.rate(P, 'c:1')`, k.Rate("c:1")},
		{`K.duty(P, 'd:1')`, k.Duty("d:1")},
		{`K.clock(P)`, k.Clock()},
		{`K.corrupt(P)`, k.Corrupt()},
		{`K.policy(P)`, k.Policy()},
		{`K.parked(P, 'c:1')`, k.Parked("c:1")},
		{`K.starved(P)`, k.Starved()},
		{`K.fp_running(P)`, k.FingerprintsRunning()},
		{`K.cancelled(P)`, k.Cancelled()},
		{`K.wf(P, 'w:1')`, k.Workflow("w:1")},
		{`K.wf_history(P, 'w:1')`, k.WorkflowHistory("w:1")},
		{`K.wf_runs(P, 'w:1')`, k.WorkflowRuns("w:1")},
		{`K.wf_timers(P, 'w:1')`, k.WorkflowTimers("w:1")},
		{`K.wf_ids(P)`, k.WorkflowIDs()},
		{`K.wf_status(P, 'running')`, k.WorkflowsInStatus("running")},
		{`K.wf_query(P, 'type:t:1')`, k.WorkflowQuery("type:t:1")},
		{`K.timers(P)`, k.Timers()},
		{`K.vis(P, 'w:1')`, k.Visibility("w:1")},
		{`K.vis_index(P, 'ts:running:t:1')`, k.VisibilityIndex("ts:running:t:1")},
		{`K.packages(P)`, k.Packages()},
		{`K.package_index(P)`, k.PackageIndex()},
		{`K.package_routes(P)`, k.PackageRoutes()},
		{`K.package_route_index(P)`, k.PackageRouteIndex()},
		{`K.deployments(P)`, k.Deployments()},
		{`K.version_deployments(P)`, k.VersionDeployments()},
		{`K.version_runs(P)`, k.VersionRuns()},
		{`K.deployment_index(P)`, k.DeploymentIndex()},
		{`K.workloops(P)`, k.Workloops()},
		{`K.workloop_index(P)`, k.WorkloopIndex()},
		{`K.workloops_due(P)`, k.WorkloopsDue()},
		{`K.invariant_records(P, 'l:1', 'i:1')`, k.InvariantRecords("l:1", "i:1")},
		{`K.ns_record(P, 'n:1')`, k.NamespaceRecord("n:1")},
		{`K.ns_index(P)`, k.NamespaceIndex()},
		{`K.wf_inbox(P, 'w:1')`, k.WorkflowInbox("w:1")},
		{`K.wf_closed(P, 'w:1')`, k.WorkflowClosed("w:1")},
		{`K.wf_steps(P, 'w:1')`, k.WorkflowSteps("w:1")},
		{`K.counters(P)`, k.Counters()},
		{`K.schedule(P, 's:1')`, k.Schedule("s:1")},
		{`K.schedules(P)`, k.Schedules()},
		{`K.schedules_due(P)`, k.SchedulesDue()},
		{`K.workers(P)`, k.Workers()},
		{`K.workers_seen(P)`, k.WorkersSeen()},
		{`K.queue_workers(P, 'q')`, k.QueueWorkers("q")},
		{`K.job_index(P, 'q', 'held', 'k:1')`, k.JobIndex("q", "held", "k:1")},
		{`K.job_filter_index(P, 'q', 'archived', 'k:1', 'p', 't:1')`, k.JobFilterIndex("q", StateArchived, "k:1", "p", "t:1")},
		{`K.kinds(P, 'q')`, k.Kinds("q")},
		{`K.partition_counts(P, 'q', 't:1')`, k.PartitionCounts("q", "t:1")},
		{`K.partition_counts_named(P, 'q')`, k.PartitionCountsNamed("q")},
		{`K.timers_armed(P)`, k.TimersArmed()},
		{`K.admission(P, 'l:1')`, k.Admission("l:1")},
		{`K.series(P, 'q')`, k.Series("q")},
		{`K.admitted_in(P, 'q', 29345678)`, k.AdmittedIn("q", 29345678)},
	}
	var src strings.Builder
	src.WriteString(libDefinitions(t, func(name string) bool { return strings.HasPrefix(name, "K.") }))
	src.WriteString("\nlocal P = KEYS[1]\nlocal got = {}\n")
	want := make([]string, len(keys))
	for i, key := range keys {
		// One append a key: a table constructor of more than 50 calls loses entries in
		// miniredis's Lua.
		src.WriteString("got[#got + 1] = " + key.lua + "\n")
		want[i] = key.golang
	}
	src.WriteString("return got")
	got, err := rdb.Eval(context.Background(), src.String(), []string{k.Prefix()}).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("lua returned %d keys for %d rows", len(got), len(want))
	}
	for i, key := range keys {
		if got[i] != want[i] {
			t.Errorf("%s = %q, but keys.go says %q", key.lua, got[i], want[i])
		}
	}
	// Every key method of keys.go is covered above.
	if n := reflect.TypeOf(k).NumMethod() - 3; n != len(want) { // minus Prefix, JobPattern and Format, which no script touches
		t.Errorf("keys.go has %d key functions, the test covers %d", n, len(want))
	}
	for _, key := range want {
		if !strings.HasPrefix(key, "hg:{ns:1}:") {
			t.Errorf("key %q is outside the namespace's hash tag", key)
		}
	}
	// The namespace registry spans namespaces: a slot of its own.
	if p := registryKeys("").Prefix(); p != "hg:{registry}:" {
		t.Errorf("registry prefix is %q", p)
	}
	if p := registryKeys("s:1").Prefix(); p != "hg:{registry:s:1}:" {
		t.Errorf("scoped registry prefix is %q", p)
	}
}

// scriptWithIncludes is a script's body (after its header) and what it includes.
type scriptWithIncludes struct {
	body     string
	includes []string
}

// scriptsIncludes returns every script but lib.lua, by name.
func scriptsIncludes(t *testing.T) map[string]scriptWithIncludes {
	t.Helper()
	out := map[string]scriptWithIncludes{}
	for name, src := range scriptSources(t) {
		if name == "lib" {
			continue
		}
		includes, err := scriptIncludes(name, src)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = scriptWithIncludes{body: src[len(header(src)):], includes: includes}
	}
	return out
}

// TestLuaScriptIncludes pins what each script pulls in from lib.lua: its includes and
// everything they reach, in lib.lua order, one line a script in
// testdata/lua_includes.golden. A change there changes what every call of the script
// parses and runs: review the file's diff, after
// HEADGATE_UPDATE_GOLDEN=1 go test -run TestLuaScriptIncludes .
func TestLuaScriptIncludes(t *testing.T) {
	const golden = "testdata/lua_includes.golden"
	var lines []string
	for name, sc := range scriptsIncludes(t) {
		in, err := lib.closure(name, sc.includes)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, d := range lib.defs {
			if in[i] {
				got = append(got, d.names...)
			}
		}
		lines = append(lines, name+": "+strings.Join(got, " "))
	}
	slices.Sort(lines)
	got := strings.Join(lines, "\n") + "\n"
	if os.Getenv("HEADGATE_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, d := range diffLines(want, lines) {
		t.Error(d)
	}
	if t.Failed() {
		t.Log("if the change is meant, run: HEADGATE_UPDATE_GOLDEN=1 go test -run TestLuaScriptIncludes .")
	}
}

// diffLines names each script whose line differs between the golden file and the
// scripts, and each script only one of them has.
func diffLines(want, got []string) []string {
	byName := func(lines []string) map[string]string {
		m := map[string]string{}
		for _, l := range lines {
			name, rest, _ := strings.Cut(l, ": ")
			m[name] = rest
		}
		return m
	}
	w, g := byName(want), byName(got)
	var out []string
	for name, gl := range g {
		wl, ok := w[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s.lua has no line in the golden file; it pulls in:\n %s", name, gl))
		case wl != gl:
			out = append(out, fmt.Sprintf("%s.lua pulls in\n %s\nthe golden file says\n %s", name, gl, wl))
		}
	}
	for name := range w {
		if _, ok := g[name]; !ok {
			out = append(out, fmt.Sprintf("the golden file lists %s.lua, which does not exist", name))
		}
	}
	slices.Sort(out)
	return out
}

// TestLuaIncludesMatchUses holds every include list to the code it stands for: a script,
// or a definition of lib.lua, that uses a name of lib.lua includes it once, and
// includes nothing it does not use. Names inside strings and comments are not uses.
func TestLuaIncludesMatchUses(t *testing.T) {
	defined := func(n string) bool { _, ok := lib.defined[n]; return ok }
	check := func(what, code string, own, includes []string) {
		used := luaNamesUsed(stripLua(code), defined)
		for _, n := range used {
			if !slices.Contains(own, n) && !slices.Contains(includes, n) {
				t.Errorf("%s uses %s without --- @include %s", what, n, n)
			}
		}
		seen := map[string]bool{}
		for _, n := range includes {
			if !slices.Contains(used, n) {
				t.Errorf("%s includes %s but does not use it", what, n)
			}
			if seen[n] {
				t.Errorf("%s includes %s twice", what, n)
			}
			seen[n] = true
		}
	}
	for name, sc := range scriptsIncludes(t) {
		check(name+".lua", sc.body, nil, sc.includes)
	}
	for _, d := range lib.defs {
		check("lib.lua "+d.names[0], d.text, d.names, d.includes)
	}
}

// TestLuaIncludeErrors: a name lib.lua does not define, an include line out of place,
// and a definition nothing reaches are refused when the scripts load.
func TestLuaIncludeErrors(t *testing.T) {
	const libSrc = `--[[ header ]]
local rcall = redis.call
--- @include rcall
local function used() return rcall('TIME') end
local function dead() return 1 end
`
	l, err := parseLib(libSrc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.assemble("s", "--[[ h ]]\n--- @include nowhere\nreturn 1\n"); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("unknown include in a script: %v", err)
	}
	if _, err := l.assemble("s", "--[[ h ]]\nlocal x = 1\n--- @include used\nreturn x\n"); err == nil {
		t.Error("an include line after the code was accepted")
	}
	got, err := l.assemble("s", "--[[ h ]]\n--- @include used\nreturn used()\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "local rcall") || strings.Contains(got, "dead") {
		t.Errorf("assembled the wrong closure:\n%s", got)
	}
	if err := l.checkAllIncluded(map[string]string{"s": "--[[ h ]]\n--- @include used\n"}); err == nil || !strings.Contains(err.Error(), "dead") {
		t.Errorf("a definition no script reaches: %v", err)
	}
	for _, bad := range []string{
		"--[[ h ]]\n--- @include nowhere\nlocal function f() end\n", // unknown name in lib
		"--[[ h ]]\nlocal x = 1\n  --- @include x\n",                // not above a definition
		"--[[ h ]]\nlocal x = 1\nlocal x = 2\n",                     // defined twice
	} {
		if _, err := parseLib(bad); err == nil {
			t.Errorf("parseLib accepted %q", bad)
		}
	}
	// Strings and comments are not code.
	code := stripLua("f('holder', \"rcall\") -- now_ms\n--[[ wake ]] g([[rank]]) h(x.holder)")
	if used := luaNamesUsed(code, func(n string) bool {
		return n == "holder" || n == "rcall" || n == "now_ms" || n == "wake" || n == "rank"
	}); len(used) > 0 {
		t.Errorf("names in strings, comments or fields taken for uses: %v", used)
	}
}
