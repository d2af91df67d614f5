package main

import "fmt"

// Kind names one scenario procedure. The same names are the first argument
// of bullmq/bench.mjs, so keep the two in step.
type Kind string

const (
	KindEnqueueSingle Kind = "enqueue-single"
	KindEnqueueBatch  Kind = "enqueue-batch"
	KindE2E           Kind = "e2e"
	KindIdleLatency   Kind = "idle-latency"
	KindAdmission     Kind = "admission"
	KindFairness      Kind = "fairness"
	KindMemory        Kind = "memory"
	// The workflow kinds run on durable-workflow engines only (workflow.go).
	KindWorkflow      Kind = "workflow"
	KindWorkflowTimer Kind = "workflow-timer"
)

// Params are the knobs of one scenario run. They travel as JSON to the Node
// bridge, hence the tags.
type Params struct {
	// Redis is host:port of the server under test.
	Redis string `json:"redis"`
	// Jobs is the scenario's main count: jobs enqueued (enqueue-*, memory),
	// drained (e2e), measured (admission), sampled (idle-latency) or the noisy
	// tenant's backlog (fairness).
	Jobs        int `json:"jobs"`
	Producers   int `json:"producers"`
	BatchSize   int `json:"batch_size"`
	Concurrency int `json:"concurrency"`
	// Backlog is the number of jobs that stay queued behind the measured ones
	// (admission).
	Backlog int `json:"backlog"`
	// Warmup is how many jobs go through untimed before the clock starts:
	// enqueued (enqueue-*) or handled (admission). Connection pools, Lua
	// script caches and Node's JIT are then warm, so the system that happens
	// to run first in a scenario is not the one that pays for them.
	Warmup int `json:"warmup"`
	// Windows is how many consecutive windows of Jobs are timed (admission);
	// the median window is reported, which keeps one hiccup on a shared
	// machine from deciding the number.
	Windows int `json:"windows"`
	// QuietTenants is the number of one-job tenants enqueued after the noisy
	// one (fairness).
	QuietTenants int `json:"quiet_tenants"`
	PayloadSize  int `json:"payload_size"`
	// SettleMS is how long the worker runs idle before the first sample, so
	// that start-up work is over and the worker is in its idle wait.
	SettleMS int `json:"settle_ms"`
	// SleepMS is the bench workflow's sleep (workflow-timer).
	SleepMS int `json:"sleep_ms"`
	// TimeoutMS bounds the run; a system that has not finished by then fails
	// the scenario instead of hanging the harness.
	TimeoutMS int `json:"timeout_ms"`
}

// Metric keys shared by the Go runner and bench.mjs.
const (
	mJobsPerSec = "jobs_per_s"
	// enqueue-batch through a system's bulk-load path (bulkBatchEnqueuer)
	mJobsPerSecBulk = "bulk_jobs_per_s"
	mP50            = "p50_ms"
	mP99            = "p99_ms"
	mUsPerJob       = "us_per_job"
	// workflow: bench workflows (3 steps, a 0 ms sleep) run to their return per second
	mWorkflowsPerSec = "workflows_per_s"
	mBytesPerJob     = "bytes_per_job"
	mElapsed         = "elapsed_s" // JSON only: wall time of the timed part
	mUsMin           = "us_per_job_min"
	mUsMax           = "us_per_job_max"
	// fairness: jobs whose handler started between a quiet job's enqueue and
	// its start, p99 over the quiet jobs. One round-robin round is one job
	// per busy tenant: 1 noisy + QuietTenants.
	mAheadP99 = "p99_jobs_ahead"
)

// Row is one line of the table drawn from a scenario's metrics.
type Row struct {
	Label  string
	Key    string
	Unit   string
	Higher bool // higher is better
}

// Scenario is one run of one Kind with fixed Params.
type Scenario struct {
	Name   string
	Kind   Kind
	Params Params
	Rows   []Row
}

// Result is what a system reports for one scenario.
type Result struct {
	Metrics map[string]float64 `json:"metrics"`
	// Note says how the system deviated from the scenario as written, e.g. a
	// missing batch API. Empty when it ran as specified.
	Note string `json:"note,omitempty"`
	// RowNotes are notes for single rows, by metric key, after Note.
	RowNotes map[string]string `json:"row_notes,omitempty"`
	// Stats is what each phase of the run cost Redis (-stats, Go systems).
	Stats []PhaseStats `json:"stats,omitempty"`
}

const (
	producers   = 8
	batchSize   = 1000
	concurrency = 50
	smallJob    = 16 // bytes: room for the harness's timestamp and flags
	memoryJob   = 100
)

// scenarios returns the run list. quick trims counts so that the whole run
// stays under two minutes on a 2-core machine.
func scenarios(quick bool) []Scenario {
	n := func(full, q int) int {
		if quick {
			return q
		}
		return full
	}
	base := Params{Producers: producers, BatchSize: batchSize, Concurrency: concurrency, PayloadSize: smallJob}
	with := func(f func(p *Params)) Params {
		p := base
		f(&p)
		return p
	}
	rate := func(label string) []Row {
		return []Row{{Label: label, Key: mJobsPerSec, Unit: "jobs/s", Higher: true}}
	}
	pct := func(label string) []Row {
		return []Row{
			{Label: label + " p50", Key: mP50, Unit: "ms"},
			{Label: label + " p99", Key: mP99, Unit: "ms"},
		}
	}

	list := []Scenario{
		{Name: "enqueue-single", Kind: KindEnqueueSingle, Rows: rate("enqueue-single"),
			Params: with(func(p *Params) { p.Jobs = n(100_000, 20_000); p.Warmup = 1000 })},
		{Name: "enqueue-batch", Kind: KindEnqueueBatch,
			// The bulk row has values only for systems with a second batch
			// path (River's COPY); the table drops it when none ran.
			Rows:   append(rate("enqueue-batch"), Row{Label: "enqueue-batch, bulk path", Key: mJobsPerSecBulk, Unit: "jobs/s", Higher: true}),
			Params: with(func(p *Params) { p.Jobs = n(100_000, 20_000); p.Warmup = 2 * batchSize })},
		{Name: "e2e", Kind: KindE2E, Rows: rate("e2e"),
			Params: with(func(p *Params) { p.Jobs = n(50_000, 20_000) })},
		{Name: "idle-latency", Kind: KindIdleLatency, Rows: pct("idle-latency"),
			// A handful of quick samples: asynq sleeps up to 1.5 s per idle poll.
			Params: with(func(p *Params) { p.Jobs = n(200, 20); p.SettleMS = 2000 })},
	}
	for _, b := range admissionBacklogs(quick) {
		list = append(list, Scenario{
			Name: "admission@" + short(b), Kind: KindAdmission,
			Rows:   []Row{{Label: "admission @" + short(b), Key: mUsPerJob, Unit: "µs/job"}},
			Params: with(func(p *Params) { p.Jobs = 2000; p.Warmup = 500; p.Windows = 3; p.Backlog = b }),
		})
	}
	list = append(list,
		Scenario{Name: "fairness", Kind: KindFairness,
			Rows:   append(pct("fairness quiet wait"), Row{Label: "fairness quiet jobs ahead p99", Key: mAheadP99, Unit: "jobs"}),
			Params: with(func(p *Params) { p.Jobs = n(100_000, 10_000); p.QuietTenants = 100 })},
		Scenario{Name: "memory", Kind: KindMemory,
			Rows:   []Row{{Label: "memory", Key: mBytesPerJob, Unit: "bytes/job"}},
			Params: with(func(p *Params) { p.Jobs = n(100_000, 20_000); p.PayloadSize = memoryJob })},
		Scenario{Name: "workflow", Kind: KindWorkflow,
			Rows:   []Row{{Label: "workflow 3 steps + 0 ms sleep", Key: mWorkflowsPerSec, Unit: "workflows/s", Higher: true}},
			Params: with(func(p *Params) { p.Jobs = n(5_000, 1_000) })},
		Scenario{Name: "workflow-timer", Kind: KindWorkflowTimer,
			Rows: pct("workflow timer lateness"),
			// One workflow at a time on an idle worker; go-workflows' timers can
			// take a second, so few samples.
			Params: with(func(p *Params) { p.Jobs = n(100, 20); p.SleepMS = 50; p.SettleMS = 1000 })},
	)
	for i := range list {
		p := &list[i].Params
		// Generous: asynq drains about 8k jobs/s here, so the 1M pre-load
		// alone takes over a minute.
		p.TimeoutMS = n(15*60_000, 90_000)
	}
	return list
}

func admissionBacklogs(quick bool) []int {
	if quick {
		return []int{1_000, 100_000}
	}
	return []int{1_000, 100_000, 1_000_000}
}

// admissionRatioRow compares the largest backlog with the smallest: 1.0 means
// admission cost does not grow with the backlog.
func admissionRatioRow(quick bool) (row Row, hi, lo string) {
	b := admissionBacklogs(quick)
	lo, hi = short(b[0]), short(b[len(b)-1])
	return Row{Label: fmt.Sprintf("admission %s/%s", hi, lo), Unit: "x"}, "admission@" + hi, "admission@" + lo
}

func short(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1_000 && n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	}
	return fmt.Sprint(n)
}
