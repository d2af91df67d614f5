package rqueuetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// enqueueUniqueCases cover the unique keys of the Enqueue transition (lua/enqueue.lua):
// strict and throttle keys, their scope, batches and replacement.
var enqueueUniqueCases = []conformanceCase{
	{"Unique/Matrix", uniqueMatrix},
	{"Unique/ScopeIsQueueAndKind", uniqueScope},
	{"Unique/BatchWithDuplicateWritesNothing", uniqueBatch},
	{"Unique/ReplacedFingerprintOfHeldHolderDecides", uniqueReplaceFingerprintOfHeldHolder},
}

// The uniqueness matrix: every combination of mode (strict, throttle), state of the job
// holding the key, and what the duplicate asks to replace, each on a namespace of its own.
//
// The contract (seed MemStore.enqueue):
//   - strict (UniqueWindow 0): the key is held while the holder is unfinished and released
//     when it becomes terminal or is deleted; then the duplicate is written as a new job.
//   - throttle (UniqueWindow > 0): the key is held until the window ends, whatever the
//     holder's state (even deleted); after the window a new job is written.
//   - a hit is *DuplicateError{ExistingID: holder, Replaced} and writes no new job.
//     Only a call of one job replaces; a batch of more refused by a duplicate writes
//     nothing at all. Replacement applies only while the holder is scheduled, available or retryable:
//     debounce replaces payload, fingerprint, schema version and tags and pushes the
//     holder to now+debounce (scheduled); ReplacePayload replaces payload, fingerprint
//     and schema version; ReplaceScheduledAt only a scheduled holder's run time (now
//     when the duplicate has none); ReplacePriority; ReplaceMaxAttempts. Nothing else of
//     the holder changes (its partition, weight, retention, attempts, fence).

const uniqueThrottleWindow = 24 * time.Hour

// uniqueMode is what a duplicate asks to update in the job holding its key.
type uniqueMode struct {
	name     string
	replace  headgate.ReplaceMask
	debounce time.Duration
	at       time.Time // the duplicate's ScheduledAt
}

var uniqueModes = []uniqueMode{
	{name: "NoReplace"},
	{name: "Debounce", debounce: 5 * time.Minute},
	{name: "ReplacePayload", replace: headgate.ReplacePayload},
	{name: "ReplaceScheduledAt", replace: headgate.ReplaceScheduledAt, at: epoch.Add(30 * time.Minute)},
	{name: "ReplaceScheduledAtZero", replace: headgate.ReplaceScheduledAt},
	{name: "ReplacePriority", replace: headgate.ReplacePriority},
	{name: "ReplaceMaxAttempts", replace: headgate.ReplaceMaxAttempts},
	{name: "DebounceAndEveryBit", debounce: 5 * time.Minute, at: epoch.Add(30 * time.Minute),
		replace: headgate.ReplacePayload | headgate.ReplaceScheduledAt | headgate.ReplacePriority | headgate.ReplaceMaxAttempts},
}

// holderSetup brings the job holding the key into one state.
type holderSetup struct {
	state headgate.State // headgate.StateDeleted: the holder is gone
	prep  func(e *headgate.Envelope)
	drive func(t *testing.T, ctx context.Context, s *headgate.Store)
}

func ackHolder(o headgate.Outcome, opts *headgate.AckOpts) func(*testing.T, context.Context, *headgate.Store) {
	return func(t *testing.T, ctx context.Context, s *headgate.Store) {
		t.Helper()
		mustAck(t, ctx, s, admitOne(t, ctx, s), o, opts)
	}
}

// crashToQuarantine loses the holder's lease up to the crash limit (3).
func crashToQuarantine(t *testing.T, ctx context.Context, s *headgate.Store) {
	t.Helper()
	for crash := 1; crash <= headgate.CrashLimitDefault; crash++ {
		admitOne(t, ctx, s)
		advance(t, ctx, s, time.Minute)
		if _, err := s.ReclaimExpired(ctx, 10); err != nil {
			t.Fatalf("reclaim: %v", err)
		}
		if crash < headgate.CrashLimitDefault {
			advance(t, ctx, s, time.Second<<(crash-1))
			if _, _, err := s.PromoteDue(ctx, 10); err != nil {
				t.Fatalf("promote: %v", err)
			}
		}
	}
}

var holderSetups = []holderSetup{
	{state: headgate.StatePending, prep: func(e *headgate.Envelope) { e.Pending = true }},
	{state: headgate.StateScheduled, prep: func(e *headgate.Envelope) { e.ScheduledAt = epoch.Add(time.Hour) }},
	{state: headgate.StateAvailable},
	{state: headgate.StateRunning, drive: func(t *testing.T, ctx context.Context, s *headgate.Store) { admitOne(t, ctx, s) }},
	{state: headgate.StateRetryable, drive: ackHolder(headgate.OutcomeRetry, &headgate.AckOpts{Error: "boom", Delay: time.Hour})},
	{state: headgate.StateCompleted, drive: ackHolder(headgate.OutcomeSuccess, nil)},
	{state: headgate.StateArchived, drive: ackHolder(headgate.OutcomeSkip, nil)},
	{state: headgate.StateCancelled, drive: func(t *testing.T, ctx context.Context, s *headgate.Store) {
		if err := s.Cancel(ctx, "holder"); err != nil {
			t.Fatalf("cancel: %v", err)
		}
	}},
	{state: headgate.StateUndecodable, drive: ackHolder(headgate.OutcomeUndecodable, nil)},
	{state: headgate.StateQuarantined, drive: crashToQuarantine},
	// Success at retention 0 deletes the holder.
	{state: headgate.StateDeleted, prep: func(e *headgate.Envelope) { e.Retention = 0 },
		drive: ackHolder(headgate.OutcomeSuccess, nil)},
}

func uniqueHolder(window time.Duration) headgate.Envelope {
	return headgate.Envelope{ID: "holder", Kind: "test:unique", Payload: []byte(`{"v":"old"}`),
		PartitionKey: "p", Fingerprint: "fp-old", Priority: 1, MaxAttempts: 5, SchemaVersion: 2,
		Tags: []string{"old"}, Retention: time.Hour, UniqueKey: "k", UniqueWindow: window}
}

// uniqueDup is a duplicate of uniqueHolder that differs from it in every field a
// replacement could touch, and in some it must never touch (partition, weight, retention).
func uniqueDup(id string, window time.Duration, m uniqueMode) headgate.Envelope {
	return headgate.Envelope{ID: id, Kind: "test:unique", Payload: []byte(`{"v":"new"}`),
		PartitionKey: "p-new", Fingerprint: "fp-new", Priority: 7, MaxAttempts: 9, SchemaVersion: 3,
		Weight: 3, Tags: []string{"new", "b", "new"}, Retention: 2 * time.Hour, UniqueKey: "k",
		UniqueWindow: window, UniqueReplace: m.replace, UniqueDebounce: m.debounce, ScheduledAt: m.at}
}

// canonicalDupTags is uniqueDup's tags, sorted and unique.
var canonicalDupTags = []string{"b", "new"}

func storeNow(t testing.TB, ctx context.Context, s *headgate.Store) time.Time {
	t.Helper()
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatalf("store time: %v", err)
	}
	return now
}

// expectReplace is the seed's replacement applied to the holder as it was before the
// duplicate: the holder expected after it, and whether it was replaced.
func expectReplace(before *headgate.Job, dup headgate.Envelope, m uniqueMode, now time.Time) (*headgate.Job, bool) {
	want := *before
	switch before.State {
	case headgate.StateScheduled, headgate.StateAvailable, headgate.StateRetryable:
	default:
		return &want, false
	}
	replaced := false
	if m.debounce > 0 {
		want.SchemaVersion, want.Payload, want.Fingerprint = dup.SchemaVersion, dup.Payload, dup.Fingerprint
		want.Tags = canonicalDupTags
		want.ScheduledAt, want.State = now.Add(m.debounce), headgate.StateScheduled
		replaced = true
	}
	if m.replace&headgate.ReplacePayload != 0 {
		want.SchemaVersion, want.Payload, want.Fingerprint = dup.SchemaVersion, dup.Payload, dup.Fingerprint
		replaced = true
	}
	if m.replace&headgate.ReplaceScheduledAt != 0 && want.State == headgate.StateScheduled {
		want.ScheduledAt = dup.ScheduledAt
		if dup.ScheduledAt.IsZero() {
			want.ScheduledAt = now
		}
		replaced = true
	}
	if m.replace&headgate.ReplacePriority != 0 {
		want.Priority = dup.Priority
		replaced = true
	}
	if m.replace&headgate.ReplaceMaxAttempts != 0 {
		want.MaxAttempts = dup.MaxAttempts
		replaced = true
	}
	return &want, replaced
}

// normTime makes times comparable with ==/DeepEqual whatever way they were built.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// jobText renders a job for comparison, times normalized.
func jobText(j *headgate.Job) string {
	c := *j
	c.ScheduledAt, c.LeaseExpiresAt = normTime(c.ScheduledAt), normTime(c.LeaseExpiresAt)
	c.CreatedAt, c.FinalizedAt = normTime(c.CreatedAt), normTime(c.FinalizedAt)
	return fmt.Sprintf("%+v", c)
}

func envelopeText(e headgate.Envelope) string {
	e.ScheduledAt = normTime(e.ScheduledAt)
	return fmt.Sprintf("%+v", e)
}

// wantCounts checks the queue's state counts (zero counts omitted).
func wantCounts(t *testing.T, ctx context.Context, s *headgate.Store, queue string, want map[headgate.State]int64) {
	t.Helper()
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatalf("queue stats: %v", err)
	}
	got := map[headgate.State]int64{}
	for _, st := range stats {
		if st.Queue == queue {
			got = st.Counts
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("queue %s counts %v, want %v", queue, got, want)
	}
}

// wantDuplicateOf enqueues e, which must be a non-replacing hit on holderID that writes
// nothing.
func wantDuplicateOf(t *testing.T, ctx context.Context, s *headgate.Store, e headgate.Envelope, holderID string) {
	t.Helper()
	_, err := s.Enqueue(ctx, e)
	d := wantErr[*headgate.DuplicateError](t, err)
	if d != nil && (d.ExistingID != holderID || d.Replaced) {
		t.Errorf("enqueue %s: %+v, want duplicate of %s, not replaced", e.ID, *d, holderID)
	}
	if st := stateOf(t, ctx, s, e.ID); st != headgate.StateDeleted {
		t.Errorf("the refused duplicate %s was written (%s)", e.ID, st)
	}
}

func uniqueMatrix(t *testing.T, s *headgate.Store) {
	for _, mode := range []struct {
		name   string
		window time.Duration
	}{{"Strict", 0}, {"Throttle", uniqueThrottleWindow}} {
		for _, hs := range holderSetups {
			for _, m := range uniqueModes {
				t.Run(fmt.Sprintf("%s/Holder%s/%s", mode.name, hs.state, m.name), func(t *testing.T) {
					t.Parallel()
					uniqueCell(t, NewStore(t, s.Client()), mode.window, hs, m)
				})
			}
		}
	}
}

func uniqueCell(t *testing.T, s *headgate.Store, window time.Duration, hs holderSetup, m uniqueMode) {
	ctx := freeze(t, s)
	holder := uniqueHolder(window)
	if hs.prep != nil {
		hs.prep(&holder)
	}
	mustEnqueue(t, ctx, s, holder)
	if hs.drive != nil {
		hs.drive(t, ctx, s)
	}
	if st := stateOf(t, ctx, s, "holder"); st != hs.state {
		t.Fatalf("setup: holder is %s, want %s", st, hs.state)
	}
	var before *headgate.Job
	if hs.state != headgate.StateDeleted {
		before = getJob(t, ctx, s, "holder")
	}
	now := storeNow(t, ctx, s)
	dup := uniqueDup("dup", window, m)
	probe := func(id string) headgate.Envelope { return uniqueDup(id, window, uniqueModes[0]) }
	released := hs.state.Terminal() || hs.state == headgate.StateDeleted

	if window == 0 && released {
		// The strict key was released when the holder finished: the duplicate is new.
		res, err := s.Enqueue(ctx, dup)
		if err != nil {
			t.Fatalf("enqueue after the holder finished (%s): %v, want success", hs.state, err)
		}
		wantSt, wantAt := headgate.StateAvailable, now
		if m.debounce > 0 {
			wantSt, wantAt = headgate.StateScheduled, now.Add(m.debounce)
		} else if m.at.After(now) {
			wantSt, wantAt = headgate.StateScheduled, m.at
		}
		if r := res[0]; r.State != wantSt || !r.ScheduledAt.Equal(wantAt) || r.Replayed {
			t.Errorf("new job: %+v, want %s at %v", r, wantSt, wantAt)
		}
		counts := map[headgate.State]int64{wantSt: 1}
		if before != nil {
			if got := getJob(t, ctx, s, "holder"); jobText(got) != jobText(before) {
				t.Errorf("the finished holder changed:\n got %s\nwant %s", jobText(got), jobText(before))
			}
			counts[before.State]++
		}
		wantCounts(t, ctx, s, headgate.QueueDefault, counts)
		// The new job holds the key now.
		wantDuplicateOf(t, ctx, s, probe("probe"), "dup")
		return
	}

	// A hit: strict on an unfinished holder, or throttle inside the window.
	var want *headgate.Job
	replaced := false
	if before != nil {
		want, replaced = expectReplace(before, dup, m, now)
	}
	var err error
	if replaced {
		_, err = s.Enqueue(ctx, dup)
	} else {
		err = unchanged(t, ctx, s, "duplicate that replaces nothing", func() error {
			_, err := s.Enqueue(ctx, dup)
			return err
		})
	}
	d := wantErr[*headgate.DuplicateError](t, err)
	if d != nil {
		if d.ExistingID != "holder" || d.Replaced != replaced {
			t.Errorf("duplicate: %+v, want ExistingID holder, Replaced %v", *d, replaced)
		}
		// The error describes the holder as the enqueue left it.
		if before == nil && d.State != headgate.StateDeleted {
			t.Errorf("duplicate of a deleted holder reports state %s, want deleted", d.State)
		}
		if before != nil && (d.State != want.State || !d.ScheduledAt.Equal(want.ScheduledAt)) {
			t.Errorf("duplicate reports holder %s at %v, want %s at %v", d.State, d.ScheduledAt, want.State, want.ScheduledAt)
		}
	}
	if st := stateOf(t, ctx, s, "dup"); st != headgate.StateDeleted {
		t.Errorf("the duplicate was written as a new job (%s)", st)
	}
	if before != nil {
		if got := getJob(t, ctx, s, "holder"); jobText(got) != jobText(want) {
			t.Errorf("holder after the duplicate:\n got %s\nwant %s", jobText(got), jobText(want))
		}
		wantCounts(t, ctx, s, headgate.QueueDefault, map[headgate.State]int64{want.State: 1})
		// Admission finds the holder exactly as it is now, once, when it is due.
		advance(t, ctx, s, 2*time.Hour)
		if _, _, err := s.PromoteDue(ctx, 100); err != nil {
			t.Fatalf("promote: %v", err)
		}
		claims := mustAdmit(t, ctx, s, admitReq("w2", 10))
		switch want.State {
		case headgate.StateScheduled, headgate.StateAvailable, headgate.StateRetryable:
			if len(claims) != 1 || claims[0].Envelope.ID != "holder" {
				t.Errorf("admitted %v once due, want [holder]", ids(claims))
			} else if got, w := envelopeText(claims[0].Envelope), envelopeText(want.Envelope); got != w {
				t.Errorf("admitted holder:\n got %s\nwant %s", got, w)
			}
		default:
			if len(claims) != 0 {
				t.Errorf("admitted %v, want nothing: the holder is %s", ids(claims), want.State)
			}
		}
	}

	if window == 0 {
		// Still held until the holder is terminal; cancelling it releases the key.
		wantDuplicateOf(t, ctx, s, probe("probe"), "holder")
		if err := s.Cancel(ctx, "holder"); err != nil {
			t.Fatalf("cancel holder: %v", err)
		}
	} else {
		// Held until the window ends, whatever the holder did meanwhile.
		end := epoch.Add(window)
		advance(t, ctx, s, end.Sub(storeNow(t, ctx, s))-time.Millisecond)
		wantDuplicateOf(t, ctx, s, probe("probe"), "holder")
		advance(t, ctx, s, time.Millisecond)
	}
	if _, err := s.Enqueue(ctx, probe("after")); err != nil {
		t.Fatalf("enqueue once the key is released: %v", err)
	}
	wantDuplicateOf(t, ctx, s, probe("probe2"), "after")
}

// uniqueScope: a key is unique per (queue, kind); a replay of the holder's own id is not a
// duplicate of itself.
func uniqueScope(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	for _, mode := range []struct {
		name   string
		window time.Duration
	}{{"strict", 0}, {"throttle", time.Hour}} {
		mk := func(id, queue, kind string) headgate.Envelope {
			e := job(mode.name + "-" + id)
			e.Queue, e.Kind, e.UniqueKey, e.UniqueWindow = queue, kind, "key-"+mode.name, mode.window
			return e
		}
		holder := mk("holder", "q1", "k1")
		mustEnqueue(t, ctx, s, holder)
		if res := mustEnqueue(t, ctx, s, holder); !res[0].Replayed {
			t.Errorf("%s: replaying the holder's id: %+v, want an idempotent replay", mode.name, res[0])
		}
		if _, err := s.Enqueue(ctx, mk("other-queue", "q2", "k1")); err != nil {
			t.Errorf("%s: same key in another queue: %v, want success", mode.name, err)
		}
		if _, err := s.Enqueue(ctx, mk("other-kind", "q1", "k2")); err != nil {
			t.Errorf("%s: same key of another kind: %v, want success", mode.name, err)
		}
		dup := mk("dup", "q1", "k1")
		err := unchanged(t, ctx, s, mode.name+" same queue and kind", func() error {
			_, err := s.Enqueue(ctx, dup)
			return err
		})
		if d := wantErr[*headgate.DuplicateError](t, err); d != nil && (d.ExistingID != holder.ID || d.Replaced) {
			t.Errorf("%s: %+v, want duplicate of %s", mode.name, *d, holder.ID)
		}
		// The jobs in the other scopes hold their own keys.
		wantDuplicateOf(t, ctx, s, mk("dup-q2", "q2", "k1"), mode.name+"-other-queue")
		wantDuplicateOf(t, ctx, s, mk("dup-k2", "q1", "k2"), mode.name+"-other-kind")
	}
}

// uniqueBatch: a batch with one duplicate writes no job of the batch, and a replacing
// duplicate in it replaces nothing: a refused batch writes nothing.
func uniqueBatch(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	mk := func(id string) headgate.Envelope {
		e := job(id)
		e.UniqueKey = "key"
		return e
	}
	holder := mk("holder")
	mustEnqueue(t, ctx, s, holder)
	replacing := mk("dup-replace")
	replacing.Payload, replacing.UniqueReplace = []byte(`{"n":2}`), headgate.ReplacePayload
	for _, order := range [][]headgate.Envelope{
		{job("fresh-a"), mk("dup-a")},
		{mk("dup-b"), job("fresh-b")},
		{job("fresh-c"), mk("dup-c"), job("fresh-d")},
		{job("fresh-e"), replacing, job("fresh-f")},
	} {
		err := unchanged(t, ctx, s, "batch with a duplicate", func() error {
			_, err := s.Enqueue(ctx, order...)
			return err
		})
		if d := wantErr[*headgate.DuplicateError](t, err); d != nil && (d.ExistingID != "holder" || d.Replaced) {
			t.Errorf("batch: %+v, want duplicate of holder, not replaced", *d)
		}
	}
	stats, err := s.QueueStats(ctx)
	if err != nil || len(stats) != 1 || stats[0].Unfinished != 1 {
		t.Errorf("stats %+v, %v: want only the holder", stats, err)
	}
	wantAdmitted(t, ctx, s, admitReq("w", 10), []string{"holder"}, "")
}

// uniqueReplaceFingerprintOfHeldHolder: a holder set aside because its fingerprint is
// quarantined takes a duplicate's new payload and fingerprint; admission then judges it
// by the fingerprint it has now, which is not quarantined.
func uniqueReplaceFingerprintOfHeldHolder(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	holder, sibling := job("holder"), job("sibling")
	holder.Fingerprint, holder.UniqueKey = "bad", "key"
	sibling.Fingerprint, sibling.Priority = "bad", 10 // admitted before the holder
	mustEnqueue(t, ctx, s, holder, sibling)
	for crash := 1; crash <= headgate.CrashLimitDefault; crash++ {
		if c := admitOne(t, ctx, s); c.Envelope.ID != "sibling" {
			t.Fatalf("admitted %s, want sibling", c.Envelope.ID)
		}
		advance(t, ctx, s, time.Minute)
		if _, err := s.ReclaimExpired(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if crash < headgate.CrashLimitDefault {
			advance(t, ctx, s, time.Second<<(crash-1))
			if _, _, err := s.PromoteDue(ctx, 10); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantState(t, ctx, s, "sibling", headgate.StateQuarantined)
	if got := mustAdmit(t, ctx, s, admitReq("w", 5)); len(got) != 0 {
		t.Fatalf("admitted %v with fingerprint bad quarantined", ids(got))
	}
	dup := job("dup")
	dup.Fingerprint, dup.UniqueKey, dup.UniqueReplace = "good", "key", headgate.ReplacePayload
	dup.Payload = []byte(`{"n":2}`)
	_, err := s.Enqueue(ctx, dup)
	if d := wantErr[*headgate.DuplicateError](t, err); d != nil && (d.ExistingID != "holder" || !d.Replaced) {
		t.Errorf("duplicate: %+v, want holder replaced", *d)
	}
	j := getJob(t, ctx, s, "holder")
	if j.Fingerprint != "good" || string(j.Payload) != `{"n":2}` || j.State != headgate.StateAvailable || j.Held {
		t.Errorf("holder after replacement: fingerprint %q payload %q state %s held %v; want good, new payload, available, not held",
			j.Fingerprint, j.Payload, j.State, j.Held)
	}
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5))); !slices.Equal(got, []string{"holder"}) {
		t.Errorf("admitted %v, want [holder]: its fingerprint is no longer quarantined", got)
	}
}
