package headgate

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/headgate/headgate/internal/reroute"
	"github.com/redis/go-redis/v9"
)

// ScriptMode is how a store runs its scripts.
type ScriptMode string

const (
	// ScriptsAuto runs each script as a Redis Function (FCALL, Redis 7+), loading its
	// library on first use, and falls back to EVALSHA/EVAL for good when the server has
	// no FCALL (Redis 6, miniredis) or the client's ACL user may not call or load
	// functions. A function pays for the lib.lua definitions it includes once, at
	// FUNCTION LOAD; EVAL pays for them on every call.
	ScriptsAuto ScriptMode = "auto"
	// ScriptsEval always runs scripts with EVALSHA (EVAL when the server lacks the
	// script), never loading a function.
	ScriptsEval ScriptMode = "eval"
	// ScriptsDefault is StoreConfig.Scripts's default.
	ScriptsDefault = ScriptsAuto
)

func (m ScriptMode) validate() error {
	switch m {
	case ScriptsAuto, ScriptsEval:
		return nil
	}
	return invalid("Scripts", "is %q: want %q or %q", m, ScriptsAuto, ScriptsEval)
}

// function is a script as a Redis Function: a library of its own (one library for all
// scripts would declare more locals than Lua's 200), holding the lib.lua definitions
// the script includes and one function that runs the script's body.
type function struct {
	name string // the library's and its function's: hg_<script>_<hash of the code>
	code string // FUNCTION LOAD's argument
}

// FunctionPrefix starts the name of every Redis Function library headgate loads.
const FunctionPrefix = "hg_"

// functionFlags is a script header's "Flags:" line: the Redis script flags its function
// is registered with. "no-writes" marks a script that writes nothing, so that it runs
// on a server out of memory, as a read-only EVAL does (Redis refuses a function without
// the flag upfront there); Redis fails any write such a script attempts.
var functionFlags = regexp.MustCompile(`(?m)^Flags: (no-writes)$`)

// resetGroup bounds the values one reset function assigns: each is an upvalue of it, and
// Lua 5.1 allows a function 60.
const resetGroup = 20

// constantName is the name of a lib.lua constant: upper case (OK, JOB_FIELDS).
var constantName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// constant reports whether d defines constants only: values no script changes
// (TestLuaConstantsNeverWritten holds every script to that), so one made at FUNCTION
// LOAD serves every call as well as one made afresh. Its definition calls nothing (a
// '(' anywhere in it, a comment's too, keeps it per call): a library that loads may
// not reach global functions such as unpack.
func (d libDef) constant() bool {
	if !d.value || strings.Contains(d.code, "(") {
		return false
	}
	for _, n := range d.names {
		if !constantName.MatchString(n) {
			return false
		}
	}
	return true
}

// function returns a script's Redis Function. The library's function definitions run
// once, at FUNCTION LOAD, and stay for every call, and so do its constants (reply
// codes, field lists, lookup tables). Its other values (rcall, and the state a call
// accumulates, like caches and pending index changes) are only declared there, and set
// at the start of each call by running their definitions, so that a call starts from
// exactly the state an EVAL of the same script would (and redis.call, which a library
// may not touch while it loads, is read during the call). Functions need nothing more:
// their upvalues are those values. A table that holds functions (K) is made once, with
// them.
//
// The name holds a hash of the code, so libraries of different headgate versions live
// side by side on one server and a library of a name never changes: loading one that
// exists is success, and needs no REPLACE.
func (l *luaLib) function(name, body string) (function, error) {
	in, err := l.included(name, body)
	if err != nil {
		return function{}, err
	}
	header, _, _ := strings.Cut(body, "]]\n")
	flags := ""
	if m := functionFlags.FindStringSubmatch(header); m != nil {
		flags = "'" + m[1] + "'"
	}
	holdsFunctions := map[string]bool{}
	for _, d := range l.defs {
		for _, n := range d.names {
			if table, _, ok := strings.Cut(n, "."); ok {
				holdsFunctions[table] = true
			}
		}
	}
	var defs, resets strings.Builder
	var calls []string
	values := 0
	for i, d := range l.defs {
		if !in[i] {
			continue
		}
		if !d.value || holdsFunctions[d.names[0]] || d.constant() {
			if d.constant() {
				// Made at load, a constant can be made only of what exists then.
				for _, n := range d.includes {
					if u := l.defs[l.defined[n]]; u.value && !u.constant() {
						return function{}, fmt.Errorf("lua/lib.lua: constant %s uses %s, which is set per call", d.names[0], n)
					}
				}
			}
			defs.WriteString(d.text)
			continue
		}
		defs.WriteString("local " + strings.Join(d.names, ", ") + "\n")
		if values%resetGroup == 0 {
			if values > 0 {
				resets.WriteString("end\n")
			}
			calls = append(calls, fmt.Sprintf("hg_reset_%d()", len(calls)+1))
			fmt.Fprintf(&resets, "local function hg_reset_%d()\n", len(calls))
		}
		resets.WriteString(strings.TrimPrefix(d.code, "local "))
		values++
	}
	if values > 0 {
		resets.WriteString("end\n")
	}
	render := func(lib string) string {
		return "#!lua name=" + lib + "\n" + defs.String() + resets.String() +
			"redis.register_function{function_name='" + lib + "', flags={" + flags + "}, callback=function(KEYS, ARGV)\n" +
			strings.Join(calls, " ") + "\n" + body + "\nend}\n"
	}
	sum := sha1.Sum([]byte(render("")))
	lib := FunctionPrefix + name + "_" + hex.EncodeToString(sum[:])[:12]
	return function{name: lib, code: render(lib)}, nil
}

// scriptRunner runs scripts whose KEYS is one key prefix (a namespace's, the
// registry's): as Redis Functions while the server allows it, else as EVALSHA/EVAL.
type scriptRunner struct {
	rdb redis.UniversalClient
	// keys is what every script takes as KEYS: the prefix, from which each script
	// derives the keys its header lists.
	keys []string
	// keyArgs is keys as command arguments, made once.
	keyArgs []any
	// eval is set once FCALL is known not to work for this client (no such command, or
	// not permitted), or from the start under ScriptsEval: EVALSHA/EVAL from then on.
	eval atomic.Bool
}

func newScriptRunner(rdb redis.UniversalClient, prefix string, mode ScriptMode) *scriptRunner {
	r := &scriptRunner{rdb: rdb, keys: []string{prefix}, keyArgs: []any{prefix}}
	r.eval.Store(mode == ScriptsEval)
	return r
}

// node returns the client of the server holding the prefix: on a cluster, the master
// of its slot.
func (r *scriptRunner) node(ctx context.Context) (redis.UniversalClient, error) {
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, r.keys[0])
	}
	return r.rdb, nil
}

// run executes a script and returns its reply after the status code, or the typed error
// the code stands for.
func (r *scriptRunner) run(ctx context.Context, sc script, jobID string, args ...any) ([]any, error) {
	cmd := r.call(ctx, sc, args, func(c []any) *redis.Cmd { return r.rdb.Do(ctx, c...) })
	if cmd.Err() != nil {
		// After a failover, point a cluster client at the slot's new master before the
		// caller retries.
		reroute.AfterFailure(r.rdb, cmd.Err())
	}
	return decodeReply(sc, jobID, cmd.Val(), cmd.Err())
}

// call runs sc once through send, which sends the command it is given (FCALL, EVALSHA
// or EVAL, with the prefix as KEYS and args) and returns it done. A function Redis does
// not have (first use, a restart without persistence, a failover to a replica that never
// had it) is loaded and called again: nothing ran, as with NOSCRIPT.
func (r *scriptRunner) call(ctx context.Context, sc script, args []any, send func([]any) *redis.Cmd) *redis.Cmd {
	// One slice for the command, made at its size: every call of every script passes
	// here.
	command := func(name, target any) []any {
		c := make([]any, 0, 3+len(r.keys)+len(args))
		c = append(c, name, target, len(r.keys))
		c = append(c, r.keyArgs...)
		return append(c, args...)
	}
	if !r.eval.Load() {
		cmd := send(command("fcall", sc.fn.name))
		switch err := cmd.Err(); {
		case redis.HasErrorPrefix(err, "Function not found"):
			err := r.load(ctx, sc.fn)
			if err == nil {
				return send(command("fcall", sc.fn.name))
			}
			if redis.HasErrorPrefix(err, "NOPERM") {
				// The user may call functions but not load them: those an operator
				// loaded would do, but which are there is unknown until each is tried.
				r.eval.Store(true)
			}
			// Otherwise (say, an out-of-memory server refusing the load) this one call
			// goes by EVAL.
		case refusesCommand(err, "fcall"):
			r.eval.Store(true)
		default:
			return cmd
		}
	}
	cmd := send(command("evalsha", sc.Hash()))
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = send(command("eval", sc.src))
	}
	return cmd
}

// refusesCommand reports whether err is the server refusing command outright: a server
// without it (Redis 6, miniredis: "unknown command"), or an ACL user not allowed it.
func refusesCommand(err error, command string) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	named := strings.Contains(msg, "'"+command+"'") || strings.Contains(msg, "`"+command+"`")
	return named && (strings.HasPrefix(msg, "err unknown command") || strings.HasPrefix(msg, "noperm"))
}

// load loads fn's library on the server holding the prefix. A library of the name is the
// same code (the name holds its hash), so "already exists" is success.
func (r *scriptRunner) load(ctx context.Context, fn function) error {
	node, err := r.node(ctx)
	if err != nil {
		return err
	}
	err = node.Do(ctx, "FUNCTION", "LOAD", fn.code).Err()
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}

// functions are the Redis Functions of this build, every script's.
var functions = sync.OnceValue(func() []function {
	entries, err := luaFiles.ReadDir("lua")
	if err != nil {
		panic(err)
	}
	var out []function
	for _, e := range entries {
		if name := strings.TrimSuffix(e.Name(), ".lua"); name != "lib" {
			out = append(out, loadScript(name).fn)
		}
	}
	return out
})

// forEachMaster calls fn on the server, or on every master of a cluster.
func forEachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("headgate: no Redis Functions on a %T", rdb)
}

// LoadFunctions loads the Redis Function library of every script of this build on the
// server, or on every master of a cluster. Stores load what they call on first use, so
// this is needed only where their ACL user may call functions but not load them (as
// ACLRules's user): an operator runs it, as a user allowed FUNCTION LOAD, before such
// clients of a new build start; until then, and for any library missing later, they
// run EVAL.
func LoadFunctions(ctx context.Context, rdb redis.UniversalClient) error {
	return forEachMaster(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		r := newScriptRunner(c, "", ScriptsAuto)
		for _, fn := range functions() {
			if err := r.load(ctx, fn); err != nil {
				return fmt.Errorf("headgate: load %s on %s: %w", fn.name, c.Options().Addr, err)
			}
		}
		return nil
	})
}

// FunctionLibrary is a Redis Function library headgate loaded on a server.
type FunctionLibrary struct {
	Addr    string `json:"addr"`    // the server's
	Name    string `json:"name"`    // FunctionPrefix, the script, a hash of its code
	Current bool   `json:"current"` // of this build
}

// Functions lists the headgate libraries on the server, or on every master of a
// cluster: those of this build and those of others, which accumulate as versions come
// and go (functions persist in RDB and AOF files and replicate).
func Functions(ctx context.Context, rdb redis.UniversalClient) ([]FunctionLibrary, error) {
	return eachLibrary(ctx, rdb, func(context.Context, *redis.Client, FunctionLibrary) (bool, error) { return true, nil })
}

// PruneFunctions deletes the headgate libraries not of this build (Functions) and
// returns them. A client of another build that still runs loads its library again on
// its next call, so pruning never breaks one.
func PruneFunctions(ctx context.Context, rdb redis.UniversalClient) ([]FunctionLibrary, error) {
	return eachLibrary(ctx, rdb, func(ctx context.Context, c *redis.Client, l FunctionLibrary) (bool, error) {
		if l.Current {
			return false, nil
		}
		if err := c.FunctionDelete(ctx, l.Name).Err(); err != nil {
			return false, fmt.Errorf("headgate: FUNCTION DELETE %s on %s: %w", l.Name, l.Addr, err)
		}
		return true, nil
	})
}

// eachLibrary calls fn on each headgate library of each master and returns those fn
// keeps, sorted.
func eachLibrary(ctx context.Context, rdb redis.UniversalClient,
	fn func(context.Context, *redis.Client, FunctionLibrary) (keep bool, err error)) ([]FunctionLibrary, error) {
	current := map[string]bool{}
	for _, f := range functions() {
		current[f.name] = true
	}
	var mu sync.Mutex
	var out []FunctionLibrary
	err := forEachMaster(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: FunctionPrefix + "*"}).Result()
		if err != nil {
			return fmt.Errorf("headgate: FUNCTION LIST on %s: %w", c.Options().Addr, err)
		}
		for _, l := range libs {
			lib := FunctionLibrary{Addr: c.Options().Addr, Name: l.Name, Current: current[l.Name]}
			keep, err := fn(ctx, c, lib)
			if err != nil {
				return err
			}
			if keep {
				mu.Lock()
				out = append(out, lib)
				mu.Unlock()
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b FunctionLibrary) int {
		return cmp.Or(cmp.Compare(a.Addr, b.Addr), cmp.Compare(a.Name, b.Name))
	})
	return out, err
}
