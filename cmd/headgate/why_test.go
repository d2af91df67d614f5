package main

import (
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// reasonOut is one reason of why -json, every field it may carry.
type reasonOut struct {
	Reason           string  `json:"reason"`
	Sentence         string  `json:"sentence"`
	Remedy           string  `json:"remedy"`
	Queue            string  `json:"queue"`
	Kind             string  `json:"kind"`
	Class            string  `json:"class"`
	Fingerprint      string  `json:"fingerprint"`
	CrashedJob       string  `json:"crashed_job"`
	Worker           string  `json:"worker"`
	LeaseID          string  `json:"lease_id"`
	State            string  `json:"state"`
	Outcome          string  `json:"outcome"`
	Message          string  `json:"message"`
	At               *string `json:"at"`
	Since            *string `json:"since"`
	LeaseUntil       *string `json:"lease_until"`
	LastSeen         *string `json:"last_seen"`
	Fence            int64   `json:"fence"`
	Attempt          int64   `json:"attempt"`
	MaxAttempts      int64   `json:"max_attempts"`
	Tokens           int64   `json:"tokens"`
	Weight           int64   `json:"weight"`
	Burst            int64   `json:"burst"`
	Running          int64   `json:"running"`
	Cap              int64   `json:"cap"`
	Unfinished       int64   `json:"unfinished"`
	Limit            int64   `json:"limit"`
	Ahead            int64   `json:"ahead"`
	AheadInPartition int64   `json:"ahead_in_partition"`
	PartitionsAhead  int64   `json:"partitions_ahead"`
	Partitions       int64   `json:"partitions"`
	Rounds           int64   `json:"rounds"`
	Quantum          int64   `json:"quantum"`
	Exact            bool    `json:"exact"`
}

type whyOut struct {
	ID      string      `json:"id"`
	State   string      `json:"state"`
	Now     *string     `json:"now"`
	Reasons []reasonOut `json:"reasons"`
}

func (b *testBundle) beat(t *testing.T, id string, liveness time.Duration) {
	t.Helper()
	if _, err := b.store.Heartbeat(b.ctx, headgate.Heartbeat{ID: id, Host: "h1", PID: 7, Queues: []string{"mail"},
		Kinds: []string{"test"}, Concurrency: 4, Started: epoch, Liveness: liveness}); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
}

func TestWhyCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "s", Queue: "mail", ScheduledAt: epoch.Add(90 * time.Second)},
		headgate.Envelope{ID: "r", Queue: "mail", Retention: time.Hour},
		headgate.Envelope{ID: "p1", Queue: "reports", PartitionKey: "t1"},
		headgate.Envelope{ID: "p2", Queue: "reports", PartitionKey: "t1"})
	b.mustRun(t, "pause", "mail")
	requireOutput(t, b.mustRun(t, "why", "s"), `
job s is scheduled:
  - scheduled at 2030-01-02T03:05:35.000Z (in 1m30s)
  - its queue mail is paused
  - no live worker serves its queue mail
to act:
  headgate edit s -at 0s   (run it now)
  headgate resume mail
  headgate workers   (start a worker that serves it)
`)
	b.mustRun(t, "resume", "mail")
	b.beat(t, "w1", time.Minute)
	if _, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w1", LeaseID: "w1-l", Queues: []string{"mail"},
		Capacity: 1, Lease: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	var out whyOut
	b.runJSON(t, exitOK, &out, "why", "r")
	at := func(d time.Duration) *string { return jsonTime(epoch.Add(d)) }
	if out.ID != "r" || out.State != "running" || *out.Now != *at(0) || len(out.Reasons) != 1 {
		t.Fatalf("why r -json: %+v", out)
	}
	want := reasonOut{Reason: "running", Worker: "w1", LeaseID: "w1-l", Fence: 1, Since: at(0), LeaseUntil: at(30 * time.Second),
		Sentence: "running on worker w1 (lease w1-l) since 2030-01-02T03:04:05.000Z (now) with fence 1, lease until 2030-01-02T03:04:35.000Z (in 30s)"}
	if got := out.Reasons[0]; !sameReason(got, want) {
		t.Errorf("why r -json: %+v\nwant %+v", got, want)
	}
	// The quantum counts the jobs ahead.
	b.runJSON(t, exitOK, &out, "why", "p2", "-quantum", "2")
	want = reasonOut{Reason: "partition_turn", Ahead: 1, AheadInPartition: 1, Partitions: 1, Quantum: 2, Exact: true,
		Sentence: "its partition's turn: 1 job ahead in the ring at quantum 2 (1 in its own partition, 0 partitions before it in turn order, 0 rounds to go)"}
	if len(out.Reasons) != 2 || out.Reasons[0].Reason != "no_live_worker" || out.Reasons[0].Queue != "reports" ||
		out.Reasons[0].Remedy != "headgate workers   (start a worker that serves it)" || !sameReason(out.Reasons[1], want) {
		t.Errorf("why p2 -json: %+v", out.Reasons)
	}

	code, _, errOut := b.run(t, "why", "nope")
	if code != exitError || !strings.Contains(errOut, "job not found") {
		t.Errorf("why nope: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = b.run(t, "why", "r", "-quantum", "0")
	if code != exitUsage || !strings.Contains(errOut, "-quantum 0") {
		t.Errorf("why -quantum 0: exit %d, stderr %q", code, errOut)
	}
}

func sameReason(a, b reasonOut) bool {
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	if str(a.At) != str(b.At) || str(a.Since) != str(b.Since) || str(a.LeaseUntil) != str(b.LeaseUntil) || str(a.LastSeen) != str(b.LastSeen) {
		return false
	}
	a.At, a.Since, a.LeaseUntil, a.LastSeen = nil, nil, nil, nil
	b.At, b.Since, b.LeaseUntil, b.LastSeen = nil, nil, nil, nil
	return a == b
}

type workerOut struct {
	ID          string   `json:"id"`
	Host        string   `json:"host"`
	PID         int      `json:"pid"`
	Queues      []string `json:"queues"`
	Kinds       []string `json:"kinds"`
	Concurrency int      `json:"concurrency"`
	InFlight    int      `json:"in_flight"`
	Started     *string  `json:"started"`
	LastSeen    *string  `json:"last_seen"`
	LiveUntil   *string  `json:"live_until"`
	Status      string   `json:"status"`
}

func TestWorkersCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	requireOutput(t, b.mustRun(t, "workers"), "namespace cli-test lists no workers\n")
	b.beat(t, "w1", 15*time.Second)
	b.beat(t, "w2", 0)
	requireOutput(t, b.mustRun(t, "workers"), `
ID  STATUS   HOST  PID  QUEUES  KINDS  IN FLIGHT  STARTED                  LAST SEEN
w1  live     h1    7    mail    test   0/4        2030-01-02 03:04:05 UTC  2030-01-02 03:04:05 UTC
w2  stopped  h1    7    mail    test   0/4        2030-01-02 03:04:05 UTC  2030-01-02 03:04:05 UTC
`)
	if err := b.store.AdvanceClock(b.ctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Workers []workerOut `json:"workers"`
	}
	b.runJSON(t, exitOK, &out, "workers")
	if len(out.Workers) != 2 {
		t.Fatalf("workers -json: %+v", out)
	}
	w := out.Workers[0]
	if w.ID != "w1" || w.Status != "dead" || w.Host != "h1" || w.PID != 7 || strings.Join(w.Queues, ",") != "mail" ||
		strings.Join(w.Kinds, ",") != "test" || w.Concurrency != 4 || *w.LastSeen != *jsonTime(epoch) ||
		*w.LiveUntil != *jsonTime(epoch.Add(15 * time.Second)) || *w.Started != *jsonTime(epoch) {
		t.Errorf("workers -json, w1 past its liveness: %+v", w)
	}
	if out.Workers[1].ID != "w2" || out.Workers[1].Status != "stopped" {
		t.Errorf("workers -json, w2: %+v", out.Workers[1])
	}
}

// TestWhyCorruptJob: a job whose data cannot be read is said to be so, not to be in an
// "unknown state", with the reason and the command to act on it.
func TestWhyCorruptJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "bad", Kind: "email", Queue: "mail"})
	if err := b.store.Client().HSet(b.ctx, "hg:{"+testNS+"}:job:bad", "prio", "high").Err(); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	b.runJSON(t, exitOK, &doc, "why", "bad")
	if st, ok := doc["state"]; !ok || st != nil {
		t.Errorf("why -json of a job whose data cannot be read: state %v (present %v), want null", st, ok)
	}
	out := b.mustRun(t, "why", "bad")
	if !strings.HasPrefix(out, "job bad cannot be read:\n  - its stored data is unusable") || !strings.Contains(out, "prio") ||
		!strings.Contains(out, "headgate corrupt") {
		t.Errorf("why of a job with corrupt data:\n%s", out)
	}
}
