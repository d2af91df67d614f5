package inspector_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/redistest"
)

// syncBuffer is a bytes.Buffer safe for the slog handler's writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// auditLogger is a text logger into buf without the attributes named by drop (the
// time, and the namespace where it differs by backend), so lines compare exactly.
func auditLogger(buf *syncBuffer, drop ...string) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if slices.Contains(drop, a.Key) {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// miniredisAudited is an inspector of namespace ns on a miniredis of its own, its client,
// and the buffer its log lines (without their time) go to.
func miniredisAudited(t *testing.T, ns string) (*inspector.Inspector, redis.UniversalClient, *syncBuffer) {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	buf := new(syncBuffer)
	insp, err := inspector.New(rdb, &inspector.Config{Namespace: ns, Logger: auditLogger(buf, slog.TimeKey)})
	if err != nil {
		t.Fatalf("inspector.New: %v", err)
	}
	return insp, rdb, buf
}

// Operator writes that take effect leave one INFO line each; reads and refusals none.
func TestOperatorWritesLogged(t *testing.T) {
	t.Parallel()
	insp, rdb, buf := miniredisAudited(t, "audited")
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "audited"})
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	ctx := context.Background()
	if _, err := store.Enqueue(ctx, headgate.Envelope{ID: "j1", Kind: "k"}, headgate.Envelope{ID: "j2", Kind: "k"}); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	_, editErr := insp.Edit(ctx, "j2", inspector.JobEdit{Priority: new(int32(3))})
	_, deleteErr := insp.Delete(ctx, "j2")
	steps := []error{
		editErr, deleteErr,
		insp.Pause(ctx, "default"),
		insp.Resume(ctx, "default"),
		insp.SetEnqueueLimit(ctx, "default", 5),
		insp.RemoveEnqueueLimit(ctx, "default"),
		insp.SetRateLimit(ctx, "api", inspector.RateLimit{Limit: 10, Window: time.Second, Burst: 10}),
		insp.RemoveRateLimit(ctx, "api"),
		insp.Cancel(ctx, "j1"),
	}
	if err := errors.Join(steps...); err != nil {
		t.Fatalf("operator writes: %v", err)
	}
	if _, err := insp.Retry(ctx, "j1", nil); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	// Refused: not logged.
	if _, err := insp.Retry(ctx, "j1", nil); !errors.As(err, new(*headgate.NotRetryableError)) {
		t.Fatalf("Retry of an available job: %v", err)
	}
	if _, err := insp.Delete(ctx, "missing"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Fatalf("Delete of a missing job: %v", err)
	}
	if err := insp.Cancel(ctx, "missing"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Fatalf("Cancel of a missing job: %v", err)
	}
	if _, err := insp.Stats(ctx); err != nil {
		t.Fatalf("Stats: %v", err)
	}
	want := `level=INFO msg="job edited" namespace=audited job_id=j2 state=available
level=INFO msg="job deleted" namespace=audited job_id=j2 was=available
level=INFO msg="queue paused" namespace=audited queue=default
level=INFO msg="queue resumed" namespace=audited queue=default
level=INFO msg="enqueue limit set" namespace=audited queue=default limit=5
level=INFO msg="enqueue limit removed" namespace=audited queue=default
level=INFO msg="rate limit set" namespace=audited class=api limit=10 window=1s burst=10
level=INFO msg="rate limit removed" namespace=audited class=api
level=INFO msg="job cancelled" namespace=audited job_id=j1
level=INFO msg="job retried" namespace=audited job_id=j1 state=available lifted_quarantine=false
`
	if got := buf.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(buf.String(), "missing") {
		t.Errorf("a refused cancel was logged")
	}
}

// An audit line records a change: an operator write that changed nothing (a release of
// no pending job, a queue paused or resumed again, a limit set to the value it has or
// removed where there is none, a rate limit removed where there is none, a schedule or
// a workflow paused or resumed again, a run-now replayed, a fingerprint released that is
// not quarantined, a deployment set to the state it is in, a workflow cancelled again
// while its cancel request is pending, a policy written with the values it has) logs nothing, while the same
// write that changes something logs its line.
func TestNoOpWritesNotLogged(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		var buf syncBuffer
		logger := auditLogger(&buf, slog.TimeKey, "namespace")
		ns := redistest.Namespace(t)
		insp, err := inspector.New(rdb, &inspector.Config{Namespace: ns, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if err := store.FreezeClock(ctx, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Enqueue(ctx, headgate.Envelope{ID: "staged", Kind: "k", Queue: "q", Pending: true},
			headgate.Envelope{ID: "ready", Kind: "k", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.AddSchedule(ctx, headgate.Schedule{Name: "nightly", Cron: "@daily", Job: headgate.Envelope{Kind: "report"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "w-1", WorkflowType: "t"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := store.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: "blue", Versions: []string{"v1"}}); err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			name string
			do   func() error
			msg  string // the line's message; "" when the step changes nothing and logs nothing
		}{
			{"release of a job that is not pending", func() error { _, err := insp.ReleasePending(ctx, "ready"); return err }, ""},
			{"release of a staged job", func() error { _, err := insp.ReleasePending(ctx, "staged"); return err }, "pending jobs released"},
			{"pause", func() error { return insp.Pause(ctx, "q") }, "queue paused"},
			{"pause of a paused queue", func() error { return insp.Pause(ctx, "q") }, ""},
			{"resume", func() error { return insp.Resume(ctx, "q") }, "queue resumed"},
			{"resume of a running queue", func() error { return insp.Resume(ctx, "q") }, ""},
			{"limit", func() error { return insp.SetEnqueueLimit(ctx, "q", 5) }, "enqueue limit set"},
			{"the same limit", func() error { return insp.SetEnqueueLimit(ctx, "q", 5) }, ""},
			{"another limit", func() error { return insp.SetEnqueueLimit(ctx, "q", 6) }, "enqueue limit set"},
			{"limit off", func() error { return insp.RemoveEnqueueLimit(ctx, "q") }, "enqueue limit removed"},
			{"limit off of an unbounded queue", func() error { return insp.RemoveEnqueueLimit(ctx, "q") }, ""},
			{"rate off of an unlimited class", func() error { return insp.RemoveRateLimit(ctx, "api") }, ""},
			{"rate", func() error {
				return insp.SetRateLimit(ctx, "api", inspector.RateLimit{Limit: 1, Window: time.Second, Burst: 1})
			}, "rate limit set"},
			{"rate off", func() error { return insp.RemoveRateLimit(ctx, "api") }, "rate limit removed"},
			{"rate off again", func() error { return insp.RemoveRateLimit(ctx, "api") }, ""},
			{"cron pause", func() error { _, err := insp.PauseSchedule(ctx, "nightly"); return err }, "schedule paused"},
			{"cron pause of a paused schedule", func() error { _, err := insp.PauseSchedule(ctx, "nightly"); return err }, ""},
			{"cron resume", func() error { _, err := insp.ResumeSchedule(ctx, "nightly"); return err }, "schedule resumed"},
			{"cron resume of an active schedule", func() error { _, err := insp.ResumeSchedule(ctx, "nightly"); return err }, ""},
			{"run-now", func() error { _, err := insp.RunScheduleNow(ctx, "nightly"); return err }, "schedule run now"},
			{"run-now replayed (the same store time)", func() error {
				r, err := insp.RunScheduleNow(ctx, "nightly")
				if err == nil && !r.Replayed {
					return errors.New("the second run-now at a frozen clock was not a replay")
				}
				return err
			}, ""},
			{"release of a fingerprint not quarantined", func() error { _, err := insp.ReleaseQuarantine(ctx, "never"); return err }, ""},
			{"workflow pause", func() error { _, err := insp.PauseWorkflow(ctx, "w-1", ""); return err }, "workflow paused"},
			{"workflow pause of a paused run", func() error { _, err := insp.PauseWorkflow(ctx, "w-1", ""); return err }, ""},
			{"workflow resume", func() error { _, err := insp.ResumeWorkflow(ctx, "w-1", ""); return err }, "workflow resumed"},
			{"workflow resume of a running run", func() error { _, err := insp.ResumeWorkflow(ctx, "w-1", ""); return err }, ""},
			{"workflow cancel", func() error { _, err := insp.CancelWorkflow(ctx, "w-1", ""); return err }, "workflow cancel requested"},
			{"workflow cancel of a run cancel was requested of", func() error {
				requested, err := insp.CancelWorkflow(ctx, "w-1", "again")
				if err == nil && requested {
					return errors.New("the second cancel was requested again")
				}
				return err
			}, ""},
			{"policy", func() error { return setPolicyField(ctx, insp, "snooze_limit", "7") }, "policy field set"},
			{"policy of the same value", func() error { return setPolicyField(ctx, insp, "snooze_limit", "7") }, ""},
			{"drain", func() error { _, err := insp.SetDeploymentState(ctx, "blue", headgate.DesiredDraining); return err },
				"worker deployment state set"},
			{"drain of a draining deployment", func() error {
				_, err := insp.SetDeploymentState(ctx, "blue", headgate.DesiredDraining)
				return err
			}, ""},
		}
		for _, st := range steps {
			before := buf.String()
			if err := st.do(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			added := strings.TrimPrefix(buf.String(), before)
			want := ""
			if st.msg != "" {
				want = fmt.Sprintf("level=INFO msg=%q", st.msg)
			}
			switch {
			case want == "" && added != "":
				t.Errorf("%s changed nothing and logged %q", st.name, added)
			case want != "" && (strings.Count(added, "\n") != 1 || !strings.HasPrefix(added, want)):
				t.Errorf("%s logged %q, want one line starting %s", st.name, added, want)
			}
		}
	})
}

// setPolicyField sets one field of the namespace's policy as `headgate policy set` does:
// read, change, write back.
func setPolicyField(ctx context.Context, insp *inspector.Inspector, field, value string) error {
	p, err := insp.Policy(ctx)
	if err != nil {
		return err
	}
	if err := p.Set(field, value); err != nil {
		return err
	}
	return insp.SetPolicy(ctx, p)
}

// SetPolicy logs one line per field whose value it changes, old and new; a refused
// policy logs nothing.
func TestSetPolicyLogsChangedFields(t *testing.T) {
	t.Parallel()
	insp, _, buf := miniredisAudited(t, "pol")
	ctx := t.Context()
	p, err := insp.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.RetryBase, p.CrashLimit = 2*time.Second, 9
	if err := insp.SetPolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.CrashLimit = 0
	if err := insp.SetPolicy(ctx, p); !errors.As(err, new(*headgate.InvalidError)) {
		t.Fatalf("SetPolicy with crash limit 0: %v, want *InvalidError", err)
	}
	want := `level=INFO msg="policy field set" namespace=pol field=retry_base old=1s new=2s
level=INFO msg="policy field set" namespace=pol field=crash_limit old=3 new=9
`
	if got := buf.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}

// A release with -retry whose crashed job was retried already (or is gone) lifts the
// fingerprint and retries nothing: its line says it released the quarantine, not that
// it retried a job, with no empty job id.
func TestReleaseAndRetryLogsWhatItDid(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "namespace" {
				return slog.Attr{}
			}
			return a
		},
	}))
	b := setup(t)
	var err error
	b.insp, err = inspector.New(b.store.Client(), &inspector.Config{Namespace: b.store.Namespace(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	b.enqueue(t, headgate.Envelope{ID: "crasher", Queue: "q", Fingerprint: "import:42", Priority: 10},
		headgate.Envelope{ID: "sibling", Queue: "q", Fingerprint: "import:42"})
	if claims := b.admit(t, "q", 1); len(claims) != 1 {
		t.Fatalf("admitted %+v, want crasher", claims)
	}
	if err := b.store.AdvanceClock(b.ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if r, err := b.store.ReclaimExpired(b.ctx, 10); err != nil || len(r) != 1 || !r[0].Quarantined {
		t.Fatalf("ReclaimExpired = %+v, %v; want crasher quarantined", r, err)
	}
	if _, err := b.store.Retry(b.ctx, "crasher", nil); err != nil { // held: its fingerprint stays quarantined
		t.Fatal(err)
	}
	before := buf.String()
	r, err := b.insp.ReleaseQuarantineAndRetry(b.ctx, "import:42")
	if err != nil || !r.Lifted || r.JobID != "" {
		t.Fatalf("ReleaseQuarantineAndRetry = %+v, %v; want lifted, no job retried", r, err)
	}
	added := strings.TrimPrefix(buf.String(), before)
	if want := `level=INFO msg="quarantine released" fingerprint=import:42 siblings_released=1` + "\n"; added != want {
		t.Errorf("logged %q, want %q", added, want)
	}
}
