package inspector

import (
	"context"
	"slices"
)

// audit logs an operator write that took effect (err nil) and returns err.
func (i *Inspector) audit(err error, msg string, attrs ...any) error {
	return i.auditChange(true, err, msg, attrs...)
}

// auditChange is audit of a write that may have changed nothing: an audit line records a
// change, so a write that took effect as a no-op (changed false: a paused queue paused
// again, a limit removed where there was none) logs nothing.
func (i *Inspector) auditChange(changed bool, err error, msg string, attrs ...any) error {
	if err == nil && changed {
		i.log.Info(msg, attrs...)
	}
	return err
}

// The writes below report nothing of what they found, so the inspector reads the
// setting just before: the write changes it unless it is as asked already. A read that
// fails counts as a change (a line too many, never one missing), and the write goes
// ahead whatever the read found: the read only decides the audit line. A concurrent
// write of the same setting by another operator between the two may make the line
// wrong, never the setting.

// queueSetting reads queue's pause and enqueue limit; ok false when the read failed.
func (i *Inspector) queueSetting(ctx context.Context, queue string) (paused bool, limit *int64, ok bool) {
	stats, err := i.store.QueueStats(ctx)
	if err != nil {
		return false, nil, false
	}
	if j := slices.IndexFunc(stats, func(s QueueStats) bool { return s.Queue == queue }); j >= 0 {
		return stats[j].Paused, stats[j].Limit, true
	}
	return false, nil, true
}

// rateLimited reads whether class has a limit; ok false when the read failed.
func (i *Inspector) rateLimited(ctx context.Context, class string) (limited, ok bool) {
	st, err := i.store.RateClass(ctx, class)
	if err != nil {
		return false, false
	}
	return st.Limit != nil, true
}

// quarantined reads whether fingerprint is quarantined; ok false when the read failed.
func (i *Inspector) quarantined(ctx context.Context, fingerprint string) (quarantined, ok bool) {
	q, err := i.store.Quarantined(ctx)
	if err != nil {
		return false, false
	}
	return slices.ContainsFunc(q, func(f QuarantinedFingerprint) bool { return f.Fingerprint == fingerprint }), true
}
