package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/humandur"
)

// The -json documents of the read commands. Field names are snake_case and stable;
// times are RFC 3339 with milliseconds and zone (jsonTime), or null; durations are whole
// milliseconds in fields ending _ms; counts of every state are present, 0 included.

// queueJSON is one queue of stats -json.
type queueJSON struct {
	Queue      string           `json:"queue"`
	Paused     bool             `json:"paused"`
	Limit      *int64           `json:"enqueue_limit"`
	Unfinished int64            `json:"unfinished"`
	Held       int64            `json:"held"`
	Unrunnable int64            `json:"unrunnable"`
	Counts     map[string]int64 `json:"counts"`
	// LastHour is what the queue's acks did in the last 60 minutes; null when its
	// throughput series has no sample in them.
	LastHour *outcomesJSON `json:"last_hour"`
	// LiveWorkers counts the live workers that serve the queue; Unserved is whether it
	// has work and none of them (the table's "no live worker serves" line).
	LiveWorkers int64 `json:"live_workers"`
	Unserved    bool  `json:"unserved"`
}

// outcomesJSON is a queue's throughput over a span.
type outcomesJSON struct {
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
}

// statsJSON is the document of stats -json.
type statsJSON struct {
	Namespace   string      `json:"namespace"`
	Now         *string     `json:"now"`
	Queues      []queueJSON `json:"queues"`
	Quarantined int         `json:"quarantined_fingerprints"`
}

func statsDoc(ns string, now time.Time, stats []inspector.QueueStats, lastHour map[string]inspector.Outcomes, quarantined int) statsJSON {
	out := statsJSON{Namespace: ns, Now: jsonTime(now), Queues: []queueJSON{}, Quarantined: quarantined}
	for _, s := range stats {
		q := queueJSON{Queue: s.Queue, Paused: s.Paused, Limit: s.Limit, Unfinished: s.Unfinished, Held: s.Held,
			Unrunnable: s.Unrunnable, Counts: map[string]int64{}, LiveWorkers: s.LiveWorkers, Unserved: s.Unserved}
		for _, st := range headgate.States {
			q.Counts[string(st)] = s.Counts[st]
		}
		if h := lastHour[s.Queue]; h.Sampled {
			q.LastHour = &outcomesJSON{Completed: h.Completed, Failed: h.Failed}
		}
		out.Queues = append(out.Queues, q)
	}
	return out
}

// checkpointJSON is a job's step checkpoint.
type checkpointJSON struct {
	InProgress    string         `json:"in_progress"`
	Done          []string       `json:"done"`
	CrashesByStep map[string]int `json:"crashes_by_step"`
}

// jobJSON is one job, in jobs -json and job -json.
type jobJSON struct {
	ID             string         `json:"id"`
	Kind           string         `json:"kind"`
	Queue          string         `json:"queue"`
	State          string         `json:"state"`
	Held           bool           `json:"held"`
	Attempt        int            `json:"attempt"`
	MaxAttempts    int            `json:"max_attempts"`
	CrashAttempt   int            `json:"crash_attempt"`
	Snoozes        int            `json:"snoozes"`
	Priority       int32          `json:"priority"`
	Partition      string         `json:"partition"`
	Fingerprint    string         `json:"fingerprint"`
	RateClass      string         `json:"rate_class"`
	Weight         int            `json:"weight"`
	StickyWorker   string         `json:"sticky_worker"`
	Tags           []string       `json:"tags"`
	UniqueKey      string         `json:"unique_key"`
	UniqueWindowMS int64          `json:"unique_window_ms"`
	SchemaVersion  int            `json:"schema_version"`
	Payload        []byte         `json:"payload"` // base64
	CreatedAt      *string        `json:"created_at"`
	ScheduledAt    *string        `json:"scheduled_at"`
	FinalizedAt    *string        `json:"finalized_at"`
	RetentionMS    int64          `json:"retention_ms"`
	LeaseID        string         `json:"lease_id"`
	Fence          int64          `json:"fence"`
	LeaseExpiresAt *string        `json:"lease_expires_at"`
	Checkpoint     checkpointJSON `json:"checkpoint"`
}

func jobDoc(j *headgate.Job) jobJSON {
	out := jobJSON{ID: j.ID, Kind: j.Kind, Queue: j.Queue, State: string(j.State), Held: j.Held,
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, CrashAttempt: j.CrashAttempt, Snoozes: j.Snoozes,
		Priority: j.Priority, Partition: j.PartitionKey, Fingerprint: j.Fingerprint, RateClass: j.RateClass,
		Weight: j.Weight, StickyWorker: j.StickyWorker, Tags: j.Tags, UniqueKey: j.UniqueKey,
		UniqueWindowMS: j.UniqueWindow.Milliseconds(), SchemaVersion: j.SchemaVersion, Payload: j.Payload,
		CreatedAt: jsonTime(j.CreatedAt), ScheduledAt: jsonTime(j.ScheduledAt), FinalizedAt: jsonTime(j.FinalizedAt),
		RetentionMS: j.Retention.Milliseconds(), LeaseID: j.LeaseID, Fence: j.Fence,
		LeaseExpiresAt: jsonTime(j.LeaseExpiresAt),
		Checkpoint: checkpointJSON{InProgress: j.Checkpoint.InProgress, Done: j.Checkpoint.Done,
			CrashesByStep: j.Checkpoint.CrashesByStep}}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	if out.Payload == nil {
		out.Payload = []byte{}
	}
	if out.Checkpoint.Done == nil {
		out.Checkpoint.Done = []string{}
	}
	if out.Checkpoint.CrashesByStep == nil {
		out.Checkpoint.CrashesByStep = map[string]int{}
	}
	return out
}

// jobsJSON is the document of jobs -json: a page and the cursor of the next, null when
// the listing is done (as wf list's and wf deployments').
type jobsJSON struct {
	Jobs []jobJSON `json:"jobs"`
	Next *string   `json:"next"`
}

func jobsDoc(page *inspector.JobPage) jobsJSON {
	out := jobsJSON{Jobs: []jobJSON{}, Next: orNull(page.Next)}
	for _, j := range page.Jobs {
		out.Jobs = append(out.Jobs, jobDoc(j))
	}
	return out
}

// orNull is s for a -json document, or null when it is empty: a cursor when there is no
// next page, an error when there is none.
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// blobJSON is a job's result or output.
type blobJSON struct {
	SchemaVersion int     `json:"schema_version"`
	Bytes         []byte  `json:"bytes"` // base64
	Fence         int64   `json:"fence"`
	UpdatedAt     *string `json:"updated_at"`
}

func blobDoc(b *headgate.StoredBlob) *blobJSON {
	if b == nil {
		return nil
	}
	return &blobJSON{SchemaVersion: b.SchemaVersion, Bytes: b.Bytes, Fence: b.Fence, UpdatedAt: jsonTime(b.UpdatedAt)}
}

// progressJSON is a job's latest progress.
type progressJSON struct {
	Current   int64   `json:"current"`
	Total     int64   `json:"total"`
	Message   string  `json:"message"`
	Fence     int64   `json:"fence"`
	UpdatedAt *string `json:"updated_at"`
}

// attemptErrorJSON is one entry of a job's error history.
type attemptErrorJSON struct {
	At           *string `json:"at"`
	Attempt      int     `json:"attempt"`
	CrashAttempt int     `json:"crash_attempt"`
	Fence        int64   `json:"fence"`
	// LeaseID is the lease the attempt ran under, as a running job's lease_id (not the
	// worker's id).
	LeaseID string   `json:"lease_id"`
	Outcome string   `json:"outcome"`
	State   string   `json:"state"`
	Message string   `json:"message"`
	Stack   string   `json:"stack"`
	Logs    []string `json:"logs"`
}

// jobDetailJSON is the document of job -json.
type jobDetailJSON struct {
	Job      jobJSON            `json:"job"`
	Now      *string            `json:"now"`
	Progress *progressJSON      `json:"progress"`
	Output   *blobJSON          `json:"output"`
	Result   *blobJSON          `json:"result"`
	Errors   []attemptErrorJSON `json:"errors"`
	Corrupt  *string            `json:"corrupt"` // why the job was parked as corrupt; null when it was not
}

func jobDetailDoc(d *inspector.JobDetail, now time.Time) jobDetailJSON {
	out := jobDetailJSON{Job: jobDoc(d.Job), Now: jsonTime(now), Output: blobDoc(d.Output), Result: blobDoc(d.Result),
		Errors: []attemptErrorJSON{}}
	if d.Corrupt != "" {
		out.Corrupt = &d.Corrupt
	}
	if p := d.Progress; p != nil {
		out.Progress = &progressJSON{Current: p.Current, Total: p.Total, Message: p.Message, Fence: p.Fence,
			UpdatedAt: jsonTime(p.UpdatedAt)}
	}
	for _, e := range d.Errors {
		logs := e.Logs
		if logs == nil {
			logs = []string{}
		}
		out.Errors = append(out.Errors, attemptErrorJSON{At: jsonTime(e.At), Attempt: e.Number(),
			CrashAttempt: e.CrashAttempt, Fence: e.Fence, LeaseID: e.LeaseID, Outcome: e.Outcome, State: string(e.State),
			Message: e.Message, Stack: e.Stack, Logs: logs})
	}
	return out
}

// cmdCorrupt lists the jobs the store parked because their data could not be used.
func cmdCorrupt(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 0); err != nil {
		return err
	}
	parked, err := c.insp.CorruptJobs(ctx)
	if err != nil {
		return err
	}
	ids := slices.Sorted(maps.Keys(parked))
	if c.verbs.json {
		type corruptJob struct {
			ID     string `json:"id"`
			Reason string `json:"reason"`
		}
		out := struct {
			Corrupt []corruptJob `json:"corrupt"`
		}{Corrupt: []corruptJob{}}
		for _, id := range ids {
			out.Corrupt = append(out.Corrupt, corruptJob{id, parked[id]})
		}
		return c.printJSON(out)
	}
	if len(ids) == 0 {
		fmt.Fprintln(c.stdout, "no corrupt jobs")
		return nil
	}
	tw := c.table()
	fmt.Fprintln(tw, "JOB\tREASON")
	for _, id := range ids {
		fmt.Fprintf(tw, "%s\t%s\n", short(id), parked[id])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "\nthey are out of every queue and never run; a delete parks one again while its data is unusable: "+
		"repair what its reason names in Redis, then headgate delete ID")
	return nil
}

// rateJSON is the document of rate CLASS -json.
type rateJSON struct {
	Class       string   `json:"class"`
	Limited     bool     `json:"limited"`
	Limit       *int64   `json:"limit"`
	WindowMS    *int64   `json:"window_ms"`
	Burst       *int64   `json:"burst"`
	Tokens      *float64 `json:"tokens"`
	At          *string  `json:"at"`
	Parked      int64    `json:"parked"`
	RateLimited int64    `json:"rate_limited_total"`
}

// cmdRateShow prints one rate class: its limit, its tokens now and what it set aside.
func cmdRateShow(ctx context.Context, c *cli, class string) error {
	st, err := c.insp.RateClass(ctx, class)
	if err != nil {
		return err
	}
	if c.verbs.json {
		out := rateJSON{Class: st.Class, Limited: st.Limit != nil, At: jsonTime(st.At), Parked: st.Parked,
			RateLimited: st.RateLimited}
		if l := st.Limit; l != nil {
			window := l.Window.Milliseconds()
			out.Limit, out.WindowMS, out.Burst, out.Tokens = &l.Limit, &window, &l.Burst, &st.Tokens
		}
		return c.printJSON(out)
	}
	if st.Limit == nil {
		fmt.Fprintf(c.stdout, "rate class %s is unlimited\n", class)
	} else {
		fmt.Fprintf(c.stdout, "rate class %s: %d per %s, burst %d; %g token(s) at %s\n", class, st.Limit.Limit,
			humandur.String(st.Limit.Window), st.Limit.Burst, st.Tokens, shortTime(st.At))
	}
	fmt.Fprintf(c.stdout, "%d job(s) set aside now, %d in all\n", st.Parked, st.RateLimited)
	return nil
}
