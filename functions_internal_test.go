package headgate

import (
	"context"
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
