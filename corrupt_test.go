package headgate

import (
	"context"
	"reflect"
	"testing"

	"github.com/headgate/headgate/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// TestLuaCorruptHelpers runs lib.lua's corrupt-data helpers on healthy and corrupt keys:
// none of them raises, each names what is wrong, and park_corrupt is what CorruptJobs reads.
func TestLuaCorruptHelpers(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, testLuaCorruptHelpers)
}

func testLuaCorruptHelpers(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s, err := NewStore(rdb, &StoreConfig{Namespace: redistest.Namespace(t)})
	if err != nil {
		t.Fatal(err)
	}
	k := s.keys
	t.Cleanup(func() {
		for _, key := range []string{k.Job("ok"), k.Job("str"), k.Job("nan"), k.Job("heavy"), k.Job("frac"),
			k.Job("odd"), k.Counts("good"), k.Counts("bad"), k.Counts("huge"), k.Counts("str"), k.Corrupt()} {
			rdb.Del(context.Background(), key)
		}
	})
	for _, err := range []error{
		rdb.HSet(ctx, k.Job("ok"), "state", "scheduled", "queue", "q", "sched", "5", "prio", "-3").Err(),
		rdb.Set(ctx, k.Job("str"), "x", 0).Err(),
		rdb.HSet(ctx, k.Job("nan"), "state", "scheduled", "sched", "x").Err(),
		rdb.HSet(ctx, k.Job("heavy"), "state", "available", "weight", "99999999").Err(),
		rdb.HSet(ctx, k.Job("frac"), "state", "available", "attempt", "1.5").Err(),
		rdb.HSet(ctx, k.Job("odd"), "state", "flying").Err(),
		rdb.HSet(ctx, k.Counts("good"), "available", "3").Err(),
		rdb.HSet(ctx, k.Counts("bad"), "available", "x").Err(),
		rdb.HSet(ctx, k.Counts("huge"), "available", "99999999999999999999").Err(),
		rdb.Set(ctx, k.Counts("str"), "x", 0).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	body := `--[[ test ]]
--- @include K.job
--- @include K.counts
--- @include K.scheduled
--- @include load_job_checked
--- @include counts_ok
--- @include key_ok
--- @include safe_hmget
--- @include park_corrupt
local P = KEYS[1]
local out = {}
for _, id in ipairs({ 'ok', 'str', 'nan', 'heavy', 'frac', 'odd', 'none' }) do
  local j, why = load_job_checked(P, id, { 'state', 'queue', 'sched', 'prio', 'weight', 'attempt' })
  if j then out[#out + 1] = id .. ' ok ' .. j.sched .. ' ' .. j.prio .. ' ' .. j.weight
  elseif why then out[#out + 1] = id .. ' corrupt'
  else out[#out + 1] = id .. ' absent' end
end
for _, q in ipairs({ 'good', 'bad', 'huge', 'str', 'none' }) do
  out[#out + 1] = q .. ' ' .. tostring(counts_ok(P, q))
end
out[#out + 1] = 'zset ' .. tostring(key_ok(K.counts(P, 'good'), 'zset')) .. ' ' .. tostring(key_ok(K.scheduled(P), 'zset'))
local v, why = safe_hmget(K.job(P, 'str'), 'state')
out[#out + 1] = 'hmget ' .. tostring(v) .. ' ' .. tostring(why ~= nil)
park_corrupt(P, 'str', 'not a hash')
return out`
	src, err := mustParseLib().assemble("corrupt_helpers_test", body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rdb.Eval(ctx, src, []string{k.Prefix()}).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ok ok 5 -3 1", "str corrupt", "nan corrupt", "heavy corrupt", "frac corrupt",
		"odd corrupt", "none absent", "good true", "bad false", "huge false", "str false", "none true",
		"zset false true", "hmget nil true"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("helpers:\n got %q\nwant %q", got, want)
	}
	parked, err := s.CorruptJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parked, map[string]string{"str": "not a hash"}) {
		t.Errorf("corrupt jobs: %v", parked)
	}
}
