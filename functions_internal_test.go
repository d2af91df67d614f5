package headgate

import (
	"context"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/headgate/headgate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestFunctionsLoad loads every script's library on a private redis-server: each
// compiles within Lua's limits (200 locals in the chunk, 60 upvalues in a function),
// registers one function of the library's name, and carries the flags its header asks.
func TestFunctionsLoad(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	names := map[string]bool{}
	for name, body := range scriptSources(t) {
		if name == "lib" {
			continue
		}
		fn := loadScript(name).fn
		if !strings.HasPrefix(fn.name, FunctionPrefix+name+"_") || names[fn.name] {
			t.Errorf("%s: function name %q: want %s%s_<hash>, unique", name, fn.name, FunctionPrefix, name)
		}
		names[fn.name] = true
		got, err := rdb.FunctionLoad(ctx, fn.code).Result()
		if err != nil {
			t.Errorf("%s: FUNCTION LOAD: %v", name, err)
			continue
		}
		if got != fn.name {
			t.Errorf("%s: FUNCTION LOAD named the library %q, want %q", name, got, fn.name)
		}
		// Loading the same library again is what a second client does: "already exists".
		if err := newScriptRunner(rdb, "hg:{x}:", ScriptsAuto).load(ctx, fn); err != nil {
			t.Errorf("%s: loading the library again: %v", name, err)
		}
		libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: fn.name}).Result()
		if err != nil || len(libs) != 1 || len(libs[0].Functions) != 1 {
			t.Fatalf("%s: FUNCTION LIST = %+v, %v; want one library with one function", name, libs, err)
		}
		f := libs[0].Functions[0]
		wantFlags := []string{}
		if regexp.MustCompile(`(?m)^Flags: no-writes$`).MatchString(header(body)) {
			wantFlags = []string{"no-writes"}
		}
		if f.Name != fn.name || strings.Join(f.Flags, ",") != strings.Join(wantFlags, ",") {
			t.Errorf("%s: function %q flags %v, want %q flags %v", name, f.Name, f.Flags, fn.name, wantFlags)
		}
	}
}

// A function call starts from the state an EVAL would: what an earlier call left in the
// library's values (a counter, a cache table) is set afresh, while its functions and
// the tables holding them (K) persist. The library here is a small lib.lua of its own.
func TestFunctionValuesResetPerCall(t *testing.T) {
	t.Parallel()
	l, err := parseLib(`--[[
header
]]
local rcall = redis.call

local K = {}
function K.job(P, id) return P .. 'job:' .. id end

local LIMIT = 3
local calls, seen = 0, {}
--- @include calls
--- @include seen
local function note(k)
  calls = calls + 1
  seen[k] = (seen[k] or 0) + 1
  return seen[k]
end
`)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := l.function("reset_probe", `--[[
reset_probe.lua: counts within one call.
]]
--- @include rcall
--- @include K.job
--- @include LIMIT
--- @include calls
--- @include note
note('a')
local n = note('a')
return {calls, n, LIMIT, K.job(KEYS[1], 'x'), rcall('TIME')[1] ~= nil and 1 or 0}
`)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	if err := rdb.FunctionLoad(ctx, fn.code).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD: %v\n%s", err, fn.code)
	}
	for i := range 3 {
		got, err := rdb.FCall(ctx, fn.name, []string{"p:"}).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if want := []any{int64(2), int64(2), int64(3), "p:job:x", int64(1)}; !reflect.DeepEqual(got, want) {
			t.Errorf("call %d = %v, want %v: every call starts afresh", i+1, got, want)
		}
	}
}

// Constants are made once, at FUNCTION LOAD, outside the per-call resets; a constant made
// of a value that is set per call is refused, since at load that value does not exist.
func TestFunctionConstantsMadeAtLoad(t *testing.T) {
	t.Parallel()
	l, err := parseLib("--[[\nheader\n]]\nlocal FIELDS = { 'a', 'b' }\nlocal seen = {}\n--- @include seen\nlocal BAD = { seen }\n")
	if err != nil {
		t.Fatal(err)
	}
	fn, err := l.function("probe", "--[[\nprobe.lua\n]]\n--- @include FIELDS\n--- @include seen\nseen[1] = FIELDS[1]\nreturn seen[1]\n")
	if err != nil {
		t.Fatal(err)
	}
	defs, resets, ok := strings.Cut(fn.code, "local function hg_reset_1()")
	if !ok || !strings.Contains(defs, "local FIELDS = { 'a', 'b' }") || strings.Contains(resets, "FIELDS =") || !strings.Contains(resets, "seen = {}") {
		t.Errorf("FIELDS must be made at load and seen per call:\n%s", fn.code)
	}
	if _, err := l.function("bad", "--[[\nbad.lua\n]]\n--- @include BAD\nreturn #BAD\n"); err == nil || !strings.Contains(err.Error(), "BAD uses seen") {
		t.Errorf("a constant made of a per-call value: err = %v, want one naming BAD and seen", err)
	}
}
