package headgate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Built-in defaults of the namespace policy fields that no StoreConfig field sets.
const (
	// RetentionFailedDefault is how long archived, undecodable and cancelled jobs are kept
	// before eviction, unless the namespace policy says otherwise.
	RetentionFailedDefault = 7 * 24 * time.Hour
	// SnoozeLimitDefault is how many snoozes a job may take before a further one counts as
	// a failed attempt.
	SnoozeLimitDefault = 100
)

// maxPolicyDuration bounds policy durations so that every time the scripts compute from
// them stays an exact integer of milliseconds. The scripts take a stored value beyond it
// (lib.lua load_policy) for absent.
const maxPolicyDuration = 100 * 365 * 24 * time.Hour

// Policy is a namespace's fleet-wide policy. It lives in Redis (Keys: policy) and every
// script that applies it reads it on each call, so all workers of a namespace apply the
// same rules whatever their own configuration says. A field the namespace does not store
// falls back, per call, to the defaults of the Store making the call: StoreConfig's
// RetryBase, RetryCap, CrashLimit and CrashRetryBase, and the built-in defaults for the
// rest. SetPolicy writes every field explicitly, so after it the callers' defaults no
// longer matter.
type Policy struct {
	// RetryBase is the backoff after a job's first failed attempt; each further failure
	// doubles it, up to RetryCap. Field retry_base.
	RetryBase time.Duration
	// RetryCap bounds the retry and crash backoff. Field retry_cap.
	RetryCap time.Duration
	// CrashLimit is the number of lost leases after which a job is quarantined (at least
	// 1). Field crash_limit.
	CrashLimit int
	// CrashRetryBase is the backoff after a job's first lost lease, jittered per job by a
	// factor in [0.5, 1.5); each further crash doubles it, up to RetryCap. Field crash_base.
	CrashRetryBase time.Duration
	// RetentionArchived, RetentionUndecodable and RetentionCancelled keep jobs that ended
	// so this long before eviction; 0 keeps them until they are deleted by other means.
	// Fields ret_archived, ret_undecodable, ret_cancelled. Default RetentionFailedDefault.
	RetentionArchived    time.Duration
	RetentionUndecodable time.Duration
	RetentionCancelled   time.Duration
	// SnoozeLimit is how many snoozes a job may take; past it a snooze is a failed
	// attempt (retried with backoff, archived when attempts are spent). Field
	// snooze_limit. Default SnoozeLimitDefault.
	SnoozeLimit int
	// FingerprintInflight caps the running jobs of one fingerprint; 0 is no cap. Field
	// fp_inflight, applied by admission.
	FingerprintInflight int

	// Stored lists the fields the namespace stores (by field name); the others are the
	// defaults of the Store that read the policy. Ignored by SetPolicy.
	Stored []string
}

// PolicyFields are the policy's field names in Redis, the names `headgate policy` takes.
var PolicyFields = []string{"retry_base", "retry_cap", "crash_limit", "crash_base", "ret_archived",
	"ret_undecodable", "ret_cancelled", "snooze_limit", "fp_inflight"}

// policyField is one field of Policy: a duration (stored in ms) or a count.
type policyField struct {
	name   string
	goName string
	dur    func(p *Policy) *time.Duration
	num    func(p *Policy) *int
	min    int // a count's least value
}

var policyFields = []policyField{
	{name: "retry_base", goName: "RetryBase", dur: func(p *Policy) *time.Duration { return &p.RetryBase }},
	{name: "retry_cap", goName: "RetryCap", dur: func(p *Policy) *time.Duration { return &p.RetryCap }},
	{name: "crash_limit", goName: "CrashLimit", num: func(p *Policy) *int { return &p.CrashLimit }, min: 1},
	{name: "crash_base", goName: "CrashRetryBase", dur: func(p *Policy) *time.Duration { return &p.CrashRetryBase }},
	{name: "ret_archived", goName: "RetentionArchived", dur: func(p *Policy) *time.Duration { return &p.RetentionArchived }},
	{name: "ret_undecodable", goName: "RetentionUndecodable", dur: func(p *Policy) *time.Duration { return &p.RetentionUndecodable }},
	{name: "ret_cancelled", goName: "RetentionCancelled", dur: func(p *Policy) *time.Duration { return &p.RetentionCancelled }},
	{name: "snooze_limit", goName: "SnoozeLimit", num: func(p *Policy) *int { return &p.SnoozeLimit }},
	{name: "fp_inflight", goName: "FingerprintInflight", num: func(p *Policy) *int { return &p.FingerprintInflight }},
}

func findPolicyField(name string) (policyField, bool) {
	for _, f := range policyFields {
		if f.name == name || f.goName == name {
			return f, true
		}
	}
	return policyField{}, false
}

// PolicyFieldName returns the name in PolicyFields of a Policy field named as Go names
// it ("CrashLimit") or as an *InvalidError of SetPolicy names it ("Policy.CrashLimit").
func PolicyFieldName(field string) (string, bool) {
	f, ok := findPolicyField(strings.TrimPrefix(field, "Policy."))
	return f.name, ok
}

// Set sets one field by its name (a PolicyFields name or the Go field name) from text:
// a Go duration ("1s", "168h") for durations, a whole number for counts. It returns an
// *InvalidError naming the field when the name is unknown or the value does not parse;
// SetPolicy checks the ranges.
func (p *Policy) Set(field, value string) error {
	f, ok := findPolicyField(field)
	if !ok {
		return invalid("Policy."+field, "is not a policy field (one of %v)", PolicyFields)
	}
	if f.dur != nil {
		d, err := time.ParseDuration(value)
		if err != nil {
			return invalid("Policy."+f.goName, "%q is not a duration (e.g. 1s, 5m, 168h)", value)
		}
		*f.dur(p) = d
		return nil
	}
	n, err := strconv.Atoi(value)
	if err != nil {
		return invalid("Policy."+f.goName, "%q is not a whole number", value)
	}
	*f.num(p) = n
	return nil
}

// Value returns one field as text, as Set takes it.
func (p *Policy) Value(field string) (string, bool) {
	f, ok := findPolicyField(field)
	switch {
	case !ok:
		return "", false
	case f.dur != nil:
		return f.dur(p).String(), true
	}
	return strconv.Itoa(*f.num(p)), true
}

// validate returns an *InvalidError naming the first field out of range.
func (p *Policy) validate() error {
	for _, f := range policyFields {
		if f.dur != nil {
			if d := *f.dur(p); d < 0 || d > maxPolicyDuration {
				return invalid("Policy."+f.goName, "is %s, outside 0..%s", d, maxPolicyDuration)
			}
		} else if n := *f.num(p); n < f.min || n > 1<<31-1 {
			return invalid("Policy."+f.goName, "is %d, outside %d..%d", n, f.min, 1<<31-1)
		}
	}
	switch {
	case p.RetryBase < time.Millisecond:
		return invalid("Policy.RetryBase", "must be at least 1ms, not %s", p.RetryBase)
	case p.RetryCap < p.RetryBase:
		return invalid("Policy.RetryCap", "must be at least RetryBase (%s), not %s", p.RetryBase, p.RetryCap)
	case p.CrashRetryBase < time.Millisecond || p.CrashRetryBase > p.RetryCap:
		return invalid("Policy.CrashRetryBase", "must be between 1ms and RetryCap (%s), not %s", p.RetryCap, p.CrashRetryBase)
	}
	return nil
}

// defaultPolicy is the policy of a namespace that stores none, for this store.
func (s *Store) defaultPolicy() Policy {
	return Policy{
		RetryBase: s.cfg.RetryBase, RetryCap: s.cfg.RetryCap, CrashLimit: s.cfg.CrashLimit,
		CrashRetryBase: s.cfg.CrashRetryBase, RetentionArchived: RetentionFailedDefault,
		RetentionUndecodable: RetentionFailedDefault, RetentionCancelled: RetentionFailedDefault,
		SnoozeLimit: SnoozeLimitDefault,
	}
}

// Policy returns the namespace's policy as the scripts called by this store apply it:
// stored fields, and this store's defaults for the others (listed in Policy.Stored).
func (s *Store) Policy(ctx context.Context) (*Policy, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	h, err := s.rdb.HGetAll(ctx, s.keys.Policy()).Result()
	if err != nil {
		return nil, fmt.Errorf("headgate: policy: %w", err)
	}
	p := s.defaultPolicy()
	for _, f := range policyFields {
		v, ok := h[f.name]
		if !ok {
			continue
		}
		// The scripts take a value that is not a number for absent; so does this.
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > ms(maxPolicyDuration) {
			continue
		}
		if f.dur != nil {
			*f.dur(&p) = time.Duration(n) * time.Millisecond
		} else {
			*f.num(&p) = int(n)
		}
		p.Stored = append(p.Stored, f.name)
	}
	return &p, nil
}
