package main

import (
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

func TestTenants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	requireOutput(t, b.mustRun(t, "tenants", "mail"), `
queue mail at 2030-01-02 03:04:05 UTC: 0 partition(s) with waiting work, 0 job(s) running
`)
	b.enqueue(t,
		headgate.Envelope{ID: "a0", Queue: "mail", PartitionKey: "acme", ScheduledAt: epoch.Add(-3 * time.Hour)},
		headgate.Envelope{ID: "a1", Queue: "mail", PartitionKey: "acme", ScheduledAt: epoch.Add(-2 * time.Hour)},
		headgate.Envelope{ID: "a2", Queue: "mail", PartitionKey: "acme", ScheduledAt: epoch.Add(-5 * time.Minute)},
		headgate.Envelope{ID: "a3", Queue: "mail", PartitionKey: "acme"},
		headgate.Envelope{ID: "b1", Queue: "mail", PartitionKey: "beta", ScheduledAt: epoch.Add(-30 * time.Second)},
		headgate.Envelope{ID: "c1", Queue: "mail", PartitionKey: "gamma", ScheduledAt: epoch.Add(-50 * time.Hour)},
	)
	claims := b.admit(t, "mail", 1, 1, time.Hour)
	if claims[0].Envelope.ID != "a0" {
		t.Fatalf("admitted %s, want a0 (acme, the first partition of the ring)", claims[0].Envelope.ID)
	}
	// acme went to the back of the turn order with its admission.
	requireOutput(t, b.mustRun(t, "tenants", "mail"), `
queue mail at 2030-01-02 03:04:05 UTC: 3 partition(s) with waiting work, 1 job(s) running
in turn order, the next admitted first; waits are of the jobs at the median and the 99th percentile of each partition's line
PARTITION  BACKLOG  RUNNING  SHARE   ADMITTED/1H  ADMITTED SHARE  WAIT P50  WAIT P99  OLDEST
beta       1        0        0.0%    0            0.0%            30s       30s       30s
gamma      1        0        0.0%    0            0.0%            2d2h      2d2h      2d2h
acme       3        1        100.0%  1            100.0%          5m        2h        2h
`)
	requireOutput(t, b.mustRun(t, "tenants", "mail", "-limit", "1", "-offset", "1"), `
queue mail at 2030-01-02 03:04:05 UTC: 3 partition(s) with waiting work, 1 job(s) running
in turn order, the next admitted first; waits are of the jobs at the median and the 99th percentile of each partition's line
PARTITION  BACKLOG  RUNNING  SHARE  ADMITTED/1H  ADMITTED SHARE  WAIT P50  WAIT P99  OLDEST
gamma      1        0        0.0%   0            0.0%            2d2h      2d2h      2d2h
more: headgate -namespace cli-test tenants "mail" -offset 2 -limit 1
`)

	type partition struct {
		Partition                 string
		Backlog, Waiting, Running int64
		RunningShare              *float64 `json:"running_share"`
		AdmittedLastHour          int64    `json:"admitted_last_hour"`
		AdmittedShare             *float64 `json:"admitted_share"`
		WaitP50MS                 int64    `json:"wait_p50_ms"`
		WaitP99MS                 int64    `json:"wait_p99_ms"`
		OldestMS                  int64    `json:"oldest_ms"`
		Counts                    map[string]int64
	}
	var doc struct {
		Namespace, Queue, Now string
		PartitionsWithWork    int64 `json:"partitions_with_work"`
		Running, Offset       int64
		NextOffset            *int `json:"next_offset"`
		Partitions            []partition
	}
	b.runJSON(t, exitOK, &doc, "tenants", "mail", "-limit", "2")
	if doc.Namespace != testNS || doc.Queue != "mail" || doc.Now != "2030-01-02T03:04:05.000Z" ||
		doc.PartitionsWithWork != 3 || doc.Running != 1 || doc.Offset != 0 || doc.NextOffset == nil || *doc.NextOffset != 2 ||
		len(doc.Partitions) != 2 {
		t.Fatalf("tenants -json = %+v", doc)
	}
	beta, gamma := doc.Partitions[0], doc.Partitions[1]
	if beta.Partition != "beta" || beta.Backlog != 1 || beta.Waiting != 1 || beta.Running != 0 ||
		beta.RunningShare == nil || *beta.RunningShare != 0 || beta.WaitP50MS != 30_000 || beta.WaitP99MS != 30_000 ||
		beta.OldestMS != 30_000 || beta.Counts["available"] != 1 || len(beta.Counts) != len(headgate.States)+1 {
		t.Errorf("beta = %+v", beta)
	}
	if gamma.Partition != "gamma" || gamma.OldestMS != (50*time.Hour).Milliseconds() {
		t.Errorf("gamma = %+v", gamma)
	}
	b.runJSON(t, exitOK, &doc, "tenants", "mail", "-offset", "2")
	if len(doc.Partitions) != 1 || doc.Partitions[0].Partition != "acme" || doc.Partitions[0].Running != 1 ||
		*doc.Partitions[0].RunningShare != 1 || doc.Partitions[0].AdmittedLastHour != 1 ||
		doc.Partitions[0].AdmittedShare == nil || *doc.Partitions[0].AdmittedShare != 1 || doc.Partitions[0].WaitP50MS != (5*time.Minute).Milliseconds() ||
		doc.Partitions[0].Counts["running"] != 1 || doc.NextOffset != nil {
		t.Errorf("tenants -offset 2 -json = %+v", doc)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"tenants"}, exitUsage, "want 1 argument(s)"},
		{[]string{"tenants", "mail", "-limit", "0"}, exitUsage, "-limit 0 is outside 1..200"},
		{[]string{"tenants", "mail", "-offset", "-1"}, exitUsage, "-offset -1 is less than zero"},
		{[]string{"tenants", "a{b"}, exitError, "invalid queue"},
	} {
		if code, _, errOut := b.run(t, c.args...); code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

// TestTenantsNoPartition: the jobs of no partition are counted and named in the table.
func TestTenantsNoPartition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t,
		headgate.Envelope{ID: "n1", Queue: "mail", ScheduledAt: epoch.Add(-time.Minute)},
		headgate.Envelope{ID: "n2", Queue: "mail", ScheduledAt: epoch.Add(-time.Minute)},
		headgate.Envelope{ID: "a1", Queue: "mail", PartitionKey: "acme", ScheduledAt: epoch.Add(-time.Second)},
	)
	b.admit(t, "mail", 1, 1, time.Hour)
	out := b.mustRun(t, "tenants", "mail")
	if !strings.Contains(out, "\n(none)") {
		t.Fatalf("tenants shows no row named (none):\n%s", out)
	}
	var doc tenantsJSON
	b.runJSON(t, exitOK, &doc, "tenants", "mail")
	none := 0
	for _, p := range doc.Partitions {
		if p.Partition == "" {
			none++
			if p.Backlog+p.Running != 2 {
				t.Errorf("jobs of no partition: backlog %d, running %d; want 2 in all", p.Backlog, p.Running)
			}
		}
	}
	if none != 1 {
		t.Errorf("tenants -json has %d rows of no partition (\"\"), want 1: %+v", none, doc.Partitions)
	}
}

// A queue the namespace does not know gets a warning, not an empty table alone that
// reads as a queue with nothing waiting; a known queue gets none.
func TestTenantsUnknownQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "mail"})
	if code, _, errOut := b.run(t, "tenants", "mial"); code != exitOK || !strings.Contains(errOut, `has no queue "mial"`) {
		t.Errorf("tenants mial: exit %d, stderr %q; want exit 0 and a warning naming the queue", code, errOut)
	}
	if code, _, errOut := b.run(t, "tenants", "mail"); code != exitOK || errOut != "" {
		t.Errorf("tenants mail: exit %d, stderr %q; want no warning", code, errOut)
	}
}

// A listing or a run by filter that finds nothing in a queue the namespace does not know
// (here the default queue, when every job is in a named one) warns and names the
// namespace's queues: "no matching jobs" alone reads as a known queue without such jobs.
// A known queue that has none gets no warning, and -json's stdout is still the document.
func TestJobsUnknownQueueWarns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "mail"}, headgate.Envelope{ID: "k", Queue: "billing"})
	want := `warning: namespace cli-test has no queue "default" (it never had a job, a limit or a pause; its queues: billing, mail)` + "\n"
	for _, c := range []struct {
		args    []string
		verb    string
		wantOut string
	}{
		{[]string{"jobs", "-state", "available"}, "jobs", "no matching jobs\n"},
		{[]string{"jobs", "-state", "available", "-json"}, "jobs", "{\n  \"jobs\": [],\n  \"next\": null\n}\n"},
		{[]string{"delete", "-state", "available", "-dry-run"}, "delete", "dry run: 0 job(s) would be deleted, 0 skipped; nothing written\n"},
		{[]string{"tenants", "default"}, "tenants", ""},
	} {
		code, out, errOut := b.run(t, c.args...)
		if code != exitOK || (c.wantOut != "" && out != c.wantOut) || !strings.HasSuffix(errOut, "headgate "+c.verb+": "+want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 0, %q and the warning", c.args, code, out, errOut, c.wantOut)
		}
	}
	for _, args := range [][]string{{"jobs", "-queue", "mail", "-state", "archived"}, {"delete", "-queue", "mail", "-state", "archived"}} {
		if code, _, errOut := b.run(t, args...); code != exitOK || strings.Contains(errOut, "warning") {
			t.Errorf("%v: exit %d, stderr %q; want no warning for a known queue", args, code, errOut)
		}
	}
}

// A queue whose waiting jobs are all out of the turn order (set aside by their rate
// class here) is not shown as a queue with nothing waiting.
func TestTenantsJobsOutsideTurnOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.store.SetRateLimit(b.ctx, "pdf", headgate.RateLimit{Limit: 1, Window: time.Minute, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	b.enqueue(t, headgate.Envelope{ID: "heavy", Kind: "pdf", Queue: "docs", PartitionKey: "t1", RateClass: "pdf", Weight: 2})
	b.admit(t, "docs", 1, 0, time.Minute) // sets it aside: heavier than the class's burst
	requireOutput(t, b.mustRun(t, "tenants", "docs"), `
queue docs at 2030-01-02 03:04:05 UTC: 0 partition(s) with waiting work, 0 job(s) running
1 available job(s) wait outside the turn order: set aside by their rate class, held by a quarantined fingerprint or pinned to a worker (headgate jobs -queue docs -state available, or -state held, then headgate why ID)
`)
}
