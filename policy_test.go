package headgate

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// TestLuaPolicyMatchesGo holds lib.lua's policy fields, built-in defaults and history
// caps to policy.go and get_job.go.
func TestLuaPolicyMatchesGo(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	src := libDefinitions(t, func(name string) bool {
		return strings.HasPrefix(name, "POLICY_") || strings.HasPrefix(name, "ERROR_HISTORY_")
	}) + `
local out = {}
for _, f in ipairs(POLICY_FIELDS) do out[#out + 1] = f end
out[#out + 1] = 'fp_inflight'
return { out, POLICY_DEFAULTS.ret_archived, POLICY_DEFAULTS.ret_undecodable, POLICY_DEFAULTS.ret_cancelled,
  POLICY_DEFAULTS.snooze_limit, ERROR_HISTORY_ENTRIES, ERROR_HISTORY_BYTES }`
	v, err := rdb.Eval(context.Background(), src, []string{"hg:{x}:"}).Slice()
	if err != nil {
		t.Fatal(err)
	}
	fields := make([]string, 0)
	for _, f := range v[0].([]any) {
		fields = append(fields, f.(string))
	}
	if !slices.Equal(fields, PolicyFields) {
		t.Errorf("lua policy fields %q, go %q", fields, PolicyFields)
	}
	want := []int64{ms(RetentionFailedDefault), ms(RetentionFailedDefault), ms(RetentionFailedDefault),
		SnoozeLimitDefault, ErrorHistoryMaxEntries, ErrorHistoryMaxBytes}
	for i, w := range want {
		if got := v[i+1].(int64); got != w {
			t.Errorf("lua value %d is %d, go %d", i+1, got, w)
		}
	}
}

func TestPolicySetAndValue(t *testing.T) {
	var p Policy
	for _, f := range PolicyFields {
		val := "7"
		if f != "crash_limit" && f != "snooze_limit" && f != "fp_inflight" {
			val = "7s"
		}
		if err := p.Set(f, val); err != nil {
			t.Fatalf("Set(%s, %s): %v", f, val, err)
		}
		if got, ok := p.Value(f); !ok || got != val {
			t.Errorf("Value(%s) = %q, %t; want %q", f, got, ok, val)
		}
	}
	if p.RetentionCancelled != 7*time.Second || p.FingerprintInflight != 7 {
		t.Errorf("policy = %+v", p)
	}
	for _, c := range []struct{ field, value, want string }{
		{"nope", "1", "Policy.nope"},
		{"retry_cap", "x", "Policy.RetryCap"},
		{"snooze_limit", "1.5", "Policy.SnoozeLimit"},
	} {
		err := p.Set(c.field, c.value)
		if e, ok := err.(*InvalidError); !ok || e.Field != c.want {
			t.Errorf("Set(%s, %s) = %v, want an InvalidError naming %s", c.field, c.value, err, c.want)
		}
	}
}

// A stored field the scripts cannot read as a number is absent to them, and to Policy.
func TestPolicyUnreadableFieldIsDefault(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	s, err := NewStore(rdb, &StoreConfig{Namespace: "p", RetryBase: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rdb.HSet(ctx, s.keys.Policy(), "retry_base", "soon", "snooze_limit", "7").Err(); err != nil {
		t.Fatal(err)
	}
	p, err := s.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.RetryBase != 2*time.Second || p.SnoozeLimit != 7 || !slices.Equal(p.Stored, []string{"snooze_limit"}) {
		t.Errorf("policy = %+v", p)
	}
}

func TestPolicyFieldName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Policy.CrashLimit", "crash_limit"}, {"CrashRetryBase", "crash_base"}, {"fp_inflight", "fp_inflight"},
	} {
		if got, ok := PolicyFieldName(c.in); !ok || got != c.want {
			t.Errorf("PolicyFieldName(%q) = %q, %t; want %q", c.in, got, ok, c.want)
		}
	}
	if got, ok := PolicyFieldName("Policy.Speed"); ok {
		t.Errorf("PolicyFieldName(Policy.Speed) = %q, true; want false", got)
	}
}
