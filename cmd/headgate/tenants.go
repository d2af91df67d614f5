package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/humandur"
)

// tenantsOpts are the flags of the tenants command.
type tenantsOpts struct {
	offset, limit int
}

func tenantsFlags(fs *flag.FlagSet, c *cli) {
	jsonFlag(fs, c)
	fs.IntVar(&c.tenants.offset, "offset", 0, "skip the first `N` partitions of the turn order")
	fs.IntVar(&c.tenants.limit, "limit", 50, fmt.Sprintf("show at most `N` partitions (1..%d)", headgate.PartitionStatsMax))
}

// tenantRow is one partition as the command shows it.
type tenantRow struct {
	headgate.PartitionStat
	// Backlog counts its available jobs, held ones included; Running its running jobs.
	Backlog, Running int64
	// Share is Running's part of the queue's running jobs; -1 when the queue runs none.
	Share float64
}

// cmdTenants lists a queue's partitions with waiting work in turn order, as the
// dashboard's tenants page does: backlog, running, share of the queue's running jobs,
// admissions in the last hour with their share, and how long their waiting jobs have
// waited.
func cmdTenants(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 1); err != nil {
		return err
	}
	queue, o := args[0], c.tenants
	if o.offset < 0 {
		return usagef("-offset %d is less than zero", o.offset)
	}
	if o.limit < 1 || o.limit > headgate.PartitionStatsMax {
		return usagef("-limit %d is outside 1..%d", o.limit, headgate.PartitionStatsMax)
	}
	if err := headgate.ValidateQueueName("queue", queue); err != nil {
		return err
	}
	now, err := c.insp.Now(ctx)
	if err != nil {
		return err
	}
	parts, total, err := c.insp.PartitionStats(ctx, queue, o.offset, o.limit)
	if err != nil {
		return err
	}
	stats, err := c.insp.Stats(ctx)
	if err != nil {
		return err
	}
	var running, waiting int64
	for _, s := range stats {
		if s.Queue == queue {
			running = s.Counts[headgate.StateRunning]
			waiting = s.Counts[headgate.StateAvailable] + s.Held
		}
	}
	// An empty table would read as a queue with nothing waiting.
	if err := c.warnUnknownQueue(ctx, "tenants", queue, stats); err != nil {
		return err
	}
	rows := make([]tenantRow, len(parts))
	for i, p := range parts {
		rows[i] = tenantRow{PartitionStat: p, Backlog: p.Counts[headgate.StateAvailable] + p.Counts[headgate.StateHeld],
			Running: p.Counts[headgate.StateRunning], Share: -1}
		if running > 0 {
			rows[i].Share = float64(rows[i].Running) / float64(running)
		}
	}
	next := -1 // the offset of the next page, -1 when this is the last
	if end := o.offset + len(parts); int64(end) < total {
		next = end
	}
	if c.verbs.json {
		return c.printJSON(tenantsDoc(c.namespace, queue, now, total, running, o.offset, next, rows))
	}
	fmt.Fprintf(c.stdout, "queue %s at %s: %d partition(s) with waiting work, %d job(s) running\n",
		queue, shortTime(now), total, running)
	if len(rows) == 0 {
		if o.offset > 0 && total > 0 {
			fmt.Fprintf(c.stdout, "no partition past the first %d\n", o.offset)
		}
		if total == 0 && waiting > 0 {
			// Jobs set aside are out of the turn order: "no partition with waiting work"
			// alone would read as a queue with nothing waiting.
			fmt.Fprintf(c.stdout, "%d available job(s) wait outside the turn order: set aside by their rate class, held by a "+
				"quarantined fingerprint or pinned to a worker (headgate jobs -queue %s -state available, or -state held, then headgate why ID)\n",
				waiting, shellArg(queue))
		}
		return nil
	}
	fmt.Fprintln(c.stdout, "in turn order, the next admitted first; waits are of the jobs at the median and the 99th percentile of each partition's line")
	tw := c.table()
	fmt.Fprintln(tw, "PARTITION\tBACKLOG\tRUNNING\tSHARE\tADMITTED/1H\tADMITTED SHARE\tWAIT P50\tWAIT P99\tOLDEST")
	for _, r := range rows {
		share, admShare := "-", "-"
		if r.Share >= 0 {
			share = strconv.FormatFloat(r.Share*100, 'f', 1, 64) + "%"
		}
		if r.QueueAdmitted > 0 {
			admShare = strconv.FormatFloat(r.AdmittedShare*100, 'f', 1, 64) + "%"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", partitionLabel(r.Partition), r.Backlog, r.Running, share, r.Admitted, admShare,
			humandur.String(r.WaitP50), humandur.String(r.WaitP99), humandur.String(r.Oldest))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next >= 0 {
		fmt.Fprintf(c.stdout, "more: %s %s -offset %d -limit %d\n", c.commandLine("tenants"), strconv.Quote(queue), next, o.limit)
	}
	return nil
}

// noPartition names the jobs of no partition in a table, where a blank cell would read as
// a missing value; -json keeps the name "".
const noPartition = "(none)"

// partitionLabel is partition p as a table cell shows it.
func partitionLabel(p string) string {
	if p == "" {
		return noPartition
	}
	return p
}

// partitionJSON is one partition of tenants -json.
type partitionJSON struct {
	Partition string `json:"partition"`
	Backlog   int64  `json:"backlog"`
	Waiting   int64  `json:"waiting"`
	Running   int64  `json:"running"`
	// RunningShare is the partition's part (0..1) of the queue's running jobs; null when
	// the queue runs none.
	RunningShare *float64 `json:"running_share"`
	// AdmittedLastHour counts its jobs admitted in the last hour of store time;
	// AdmittedShare is their part (0..1) of the queue's, null when the queue admitted none.
	AdmittedLastHour int64            `json:"admitted_last_hour"`
	AdmittedShare    *float64         `json:"admitted_share"`
	WaitP50MS        int64            `json:"wait_p50_ms"`
	WaitP99MS        int64            `json:"wait_p99_ms"`
	OldestMS         int64            `json:"oldest_ms"`
	Counts           map[string]int64 `json:"counts"`
}

// tenantsJSON is the document of tenants -json.
type tenantsJSON struct {
	Namespace string  `json:"namespace"`
	Queue     string  `json:"queue"`
	Now       *string `json:"now"`
	// PartitionsWithWork counts the queue's partitions with waiting work, all pages.
	PartitionsWithWork int64           `json:"partitions_with_work"`
	Running            int64           `json:"running"`
	Offset             int             `json:"offset"`
	NextOffset         *int            `json:"next_offset"`
	Partitions         []partitionJSON `json:"partitions"`
}

func tenantsDoc(ns, queue string, now time.Time, total, running int64, offset, next int, rows []tenantRow) tenantsJSON {
	out := tenantsJSON{Namespace: ns, Queue: queue, Now: jsonTime(now), PartitionsWithWork: total, Running: running,
		Offset: offset, Partitions: []partitionJSON{}}
	if next >= 0 {
		out.NextOffset = &next
	}
	for _, r := range rows {
		p := partitionJSON{Partition: r.Partition, Backlog: r.Backlog, Waiting: r.Waiting, Running: r.Running,
			WaitP50MS: r.WaitP50.Milliseconds(), WaitP99MS: r.WaitP99.Milliseconds(), OldestMS: r.Oldest.Milliseconds(),
			Counts: map[string]int64{}}
		if r.Share >= 0 {
			p.RunningShare = &r.Share
		}
		p.AdmittedLastHour = r.Admitted
		if r.QueueAdmitted > 0 {
			p.AdmittedShare = &r.AdmittedShare
		}
		for _, st := range append(headgate.States, headgate.StateHeld) {
			p.Counts[string(st)] = r.Counts[st]
		}
		out.Partitions = append(out.Partitions, p)
	}
	return out
}
