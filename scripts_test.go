package headgate

import (
	"context"
	"io/fs"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// luaCallers maps each script to the number of KEYS its Go caller passes: every caller
// goes through Store.run, which passes Store.scriptKeys.
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
	passed := len((&Store{keys: newKeys("ns")}).scriptKeys())
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

// TestLuaKeysMatchGo holds lua/lib.lua's key builders to keys.go.
func TestLuaKeysMatchGo(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	k := newKeys("ns:1")
	lib, _ := luaFiles.ReadFile("lua/lib.lua")
	src := string(lib) + `
local P = KEYS[1]
return { K.job(P, 'id:1'), K.errors(P, 'id:1'), K.result(P, 'id:1'), K.output(P, 'id:1'),
  K.progress(P, 'id:1'), K.queues(P), K.counts(P, 'q'), K.ring(P, 'q'),
  K.ring_state(P, 'q'), K.partition(P, 'q', 't:1'), K.pinned_ring(P, 'q', 'w'),
  K.pinned_ring_state(P, 'q', 'w'), K.pinned_partition(P, 'q', 'w', 't:1'), K.wake(P, 'q'),
  K.scheduled(P), K.leases(P), K.retained(P), K.unique(P), K.throttle(P),
  K.throttle_expiry(P), K.quarantine(P), K.held(P, 'fp:1'), K.paused(P), K.limits(P),
  K.rate(P, 'c:1'), K.duty(P, 'd:1'), K.clock(P), K.corrupt(P) }`
	got, err := rdb.Eval(context.Background(), src, []string{k.Prefix()}).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{k.Job("id:1"), k.Errors("id:1"), k.Result("id:1"), k.Output("id:1"),
		k.Progress("id:1"), k.Queues(), k.Counts("q"), k.Ring("q"),
		k.RingState("q"), k.Partition("q", "t:1"), k.PinnedRing("q", "w"),
		k.PinnedRingState("q", "w"), k.PinnedPartition("q", "w", "t:1"), k.Wake("q"),
		k.Scheduled(), k.Leases(), k.Retained(), k.Unique(), k.Throttle(),
		k.ThrottleExpiry(), k.Quarantine(), k.Held("fp:1"), k.Paused(), k.Limits(),
		k.Rate("c:1"), k.Duty("d:1"), k.Clock(), k.Corrupt()}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lua keys differ from keys.go:\n lua: %q\n  go: %q", got, want)
	}
	// Every key method of keys.go is covered above.
	if n := reflect.TypeOf(k).NumMethod() - 2; n != len(want) { // minus Prefix and JobPattern
		t.Errorf("keys.go has %d key functions, the test covers %d", n, len(want))
	}
	for _, key := range want {
		if !strings.HasPrefix(key, "hg:{ns:1}:") {
			t.Errorf("key %q is outside the namespace's hash tag", key)
		}
	}
}
