package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/headgate/headgate"
)

// tenantsPage is how many partitions the tenants page shows at once.
const tenantsPage = 50

// partitionReader serves the tenants page: a queue's partitions in turn order.
type partitionReader interface {
	PartitionStats(ctx context.Context, queue string, offset, limit int) ([]headgate.PartitionStat, int64, error)
}

type tenantRow struct {
	headgate.PartitionStat
	Backlog, Running int64
	// Share is the partition's part of the queue's running jobs now; AdmittedShare its
	// part of the queue's admissions in the last hour ("—" for none).
	Share, AdmittedShareText string
	// Label is the partition's name, noPartition for the jobs of none.
	Label, JobsURL string
}

// noPartition names the jobs of no partition on the page, where a blank link would be
// neither readable nor clickable.
const noPartition = "(none)"

type tenantsData struct {
	Queue string
	// Partitions counts the partitions with waiting work (the ring); Running the queue's
	// running jobs.
	Partitions, Running int64
	// Aside counts the queue's available jobs (held ones included) when none is in the
	// turn order: all set aside by a rate class, held by a quarantine or pinned to a
	// worker, which the empty table alone would show as nothing waiting.
	Aside            int64
	AvailableURL     string
	Rows             []tenantRow
	Offset           int
	PrevURL, NextURL string
}

// tenants lists a queue's partitions with waiting work in turn order (the next admitted
// first): backlog, running, how long their waiting jobs have waited, their share of the
// queue's running jobs, and their admissions in the last hour with their share.
func (h *Handler) tenants(w http.ResponseWriter, r *http.Request) error {
	queue := r.PathValue("queue")
	if err := headgate.ValidateQueueName("queue", queue); err != nil {
		return err
	}
	offset := 0
	if v := r.URL.Query().Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return &headgate.InvalidError{Field: "offset", Reason: fmt.Sprintf("%q is not a count of partitions", v)}
		}
		offset = n
	}
	qs, err := h.src.stats.Stats(r.Context())
	if err != nil {
		return err
	}
	if err := knownQueue(qs, queue); err != nil {
		return err
	}
	stats, total, err := h.src.partitionStats.PartitionStats(r.Context(), queue, offset, tenantsPage)
	if err != nil {
		return err
	}
	d := &tenantsData{Queue: queue, Partitions: total, Offset: offset}
	for _, s := range qs {
		if s.Queue == queue {
			d.Running = s.Counts[headgate.StateRunning]
			if total == 0 {
				d.Aside = s.Counts[headgate.StateAvailable] + s.Held
			}
		}
	}
	base := baseOf(r) + "/queues/" + url.PathEscape(queue)
	d.AvailableURL = base + "/available"
	for _, st := range stats {
		row := tenantRow{PartitionStat: st, Backlog: st.Counts[headgate.StateAvailable] + st.Counts[headgate.StateHeld],
			Running: st.Counts[headgate.StateRunning], Share: "—", AdmittedShareText: "—",
			Label: st.Partition, JobsURL: base + "/available?" + url.Values{"partition": {st.Partition}}.Encode()}
		if st.Partition == "" {
			// The job indexes file no job under the partition it lacks (a filter index per
			// job would cost every enqueue a write): its link is to all the queue's available
			// jobs.
			row.Label, row.JobsURL = noPartition, base+"/available"
		}
		if d.Running > 0 {
			row.Share = fmt.Sprintf("%.1f%%", float64(row.Running)*100/float64(d.Running))
		}
		if st.QueueAdmitted > 0 {
			row.AdmittedShareText = fmt.Sprintf("%.1f%%", st.AdmittedShare*100)
		}
		d.Rows = append(d.Rows, row)
	}
	if offset > 0 {
		d.PrevURL = fmt.Sprintf("%s/tenants?offset=%d", base, max(0, offset-tenantsPage))
	}
	if int64(offset+tenantsPage) < total {
		d.NextURL = fmt.Sprintf("%s/tenants?offset=%d", base, offset+tenantsPage)
	}
	h.render(w, r, "tenants", queue+" · tenants", d)
	return nil
}
