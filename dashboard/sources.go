package dashboard

import (
	"context"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

// Each page reads through the smallest interface that serves it, so a page's data can
// come from a newer operator API (or a test double) without touching the others.

// statsReader serves the overview and the counts of a listing.
type statsReader interface {
	Now(ctx context.Context) (time.Time, error)
	Stats(ctx context.Context) ([]inspector.QueueStats, error)
}

// jobLister serves the listing of a queue and state.
type jobLister interface {
	ListJobs(ctx context.Context, f inspector.JobFilter, p inspector.Page) (*inspector.JobPage, error)
}

// jobReader serves the job page.
type jobReader interface {
	Job(ctx context.Context, id string) (*inspector.JobDetail, error)
}

// whyReader explains, on the job page, why a job that is not running is not.
type whyReader interface {
	Why(ctx context.Context, id string, opts *inspector.WhyOptions) (*inspector.Explanation, error)
}

// workerReader serves the workers page and the overview's count of live workers.
type workerReader interface {
	Workers(ctx context.Context) ([]inspector.WorkerStatus, error)
}

// scheduleSource serves the cron page and its actions.
type scheduleSource interface {
	Schedules(ctx context.Context, cursor string, limit int) ([]*inspector.ScheduleState, string, error)
	PauseSchedule(ctx context.Context, name string) (bool, error)
	ResumeSchedule(ctx context.Context, name string) (bool, error)
	RunScheduleNow(ctx context.Context, name string) (headgate.EnqueueResult, error)
}

// jobActor applies the actions on jobs: one job at a time for a selection, in bounded
// batches through the job indexes for everything matching a filter.
type jobActor interface {
	Retry(ctx context.Context, id string, opts *inspector.RetryOptions) (inspector.RetryResult, error)
	Delete(ctx context.Context, id string) (headgate.State, error)
	Cancel(ctx context.Context, id string) error
	BulkRetry(ctx context.Context, f inspector.JobFilter, o *inspector.BulkOptions) (inspector.BulkResult, error)
	BulkDelete(ctx context.Context, f inspector.JobFilter, o *inspector.BulkOptions) (inspector.BulkResult, error)
	BulkCancel(ctx context.Context, f inspector.JobFilter, o *inspector.BulkOptions) (inspector.BulkResult, error)
}

// partitionCounter counts a partition's jobs by state: the exact number a bulk action on
// a partition's jobs takes, and the tenants page's backlog.
type partitionCounter interface {
	PartitionCounts(ctx context.Context, queue, partition string) (map[headgate.State]int64, error)
}

// queueActor pauses and resumes admission from a queue.
type queueActor interface {
	Pause(ctx context.Context, queue string) error
	Resume(ctx context.Context, queue string) error
}

// quarantineSource serves the quarantine page and its actions.
type quarantineSource interface {
	Quarantined(ctx context.Context) ([]inspector.QuarantinedFingerprint, error)
	ReleaseQuarantine(ctx context.Context, fingerprint string) (int, error)
	ReleaseQuarantineAndRetry(ctx context.Context, fingerprint string) (inspector.RetryResult, error)
}

// rateReader serves the rate classes page: the tokens each configured class holds now.
type rateReader interface {
	Gauges(ctx context.Context, opts *headgate.GaugesOptions) (*headgate.Gauges, error)
}

// policyReader serves the policy page.
type policyReader interface {
	Policy(ctx context.Context) (*inspector.Policy, error)
}

// workflowReader serves the workflow pages: listings that never fold a history, a
// workflow's row and its history a page at a time.
type workflowReader interface {
	Query(ctx context.Context, filter headgate.WorkflowFilter, cursor string, limit int) ([]*headgate.WorkflowSummary, string, error)
	GetWorkflow(ctx context.Context, workflowID string) (*headgate.WorkflowSummary, error)
	ReadHistoryFrom(ctx context.Context, workflowID string, fromSeq int64, limit int) ([]headgate.Event, int64, error)
}

// sources are the readers and actors of every page.
type sources struct {
	stats      statsReader
	lister     jobLister
	job        jobReader
	why        whyReader
	workers    workerReader
	schedules  scheduleSource
	jobs       jobActor
	partitions partitionCounter
	queues     queueActor
	quarantine quarantineSource
	rates      rateReader
	series     seriesReader
	// partitionStats serves the tenants page.
	partitionStats partitionReader
	policy         policyReader
	workflows      workflowReader
}

func inspectorSources(insp *inspector.Inspector, store *headgate.Store) sources {
	return sources{stats: insp, lister: insp, job: insp, why: insp, workers: insp, schedules: insp, jobs: insp, partitions: insp, queues: insp, quarantine: insp, rates: store, series: insp, partitionStats: insp, policy: insp,
		workflows: store}
}
