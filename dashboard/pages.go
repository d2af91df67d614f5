package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/humandur"
)

// queueRow is one queue of the overview.
type queueRow struct {
	inspector.QueueStats
	Cells []stateCell
	// LastHour is what the queue's jobs did in the last hour.
	LastHour throughput
}

type stateCell struct {
	State headgate.State
	Count int64
}

type overviewData struct {
	Now         time.Time
	Queues      []queueRow
	Totals      []stateCell
	Quarantined int
	// LiveWorkers counts the namespace's live workers.
	LiveWorkers int
	// Throughput is the last hour's chart over every queue.
	Throughput *throughputChart
}

func (h *Handler) overviewOf(r *http.Request) (*overviewData, error) {
	ctx := r.Context()
	now, err := h.src.stats.Now(ctx)
	if err != nil {
		return nil, err
	}
	stats, err := h.src.stats.Stats(ctx)
	if err != nil {
		return nil, err
	}
	q, err := h.src.quarantine.Quarantined(ctx)
	if err != nil {
		return nil, err
	}
	workers, err := h.src.workers.Workers(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(stats))
	for i, s := range stats {
		names[i] = s.Queue
	}
	chart, lastHour, err := h.throughputOf(ctx, now, names)
	if err != nil {
		return nil, err
	}
	d := &overviewData{Now: now, Quarantined: len(q), LiveWorkers: liveCount(workers), Throughput: chart}
	totals := map[headgate.State]int64{}
	for _, s := range stats {
		row := queueRow{QueueStats: s, LastHour: lastHour[s.Queue]}
		if row.LastHour.Rate == "" {
			row.LastHour.Rate = "—"
		}
		for _, st := range headgate.States {
			row.Cells = append(row.Cells, stateCell{State: st, Count: s.Counts[st]})
			totals[st] += s.Counts[st]
		}
		d.Queues = append(d.Queues, row)
	}
	for _, st := range headgate.States {
		d.Totals = append(d.Totals, stateCell{State: st, Count: totals[st]})
	}
	return d, nil
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) error {
	d, err := h.overviewOf(r)
	if err != nil {
		return err
	}
	h.render(w, r, "overview", "Overview", d)
	return nil
}

// overviewSample is the live refresh's JSON: what the overview's counts and chart need.
type overviewSample struct {
	Now         int64                       `json:"now_ms"`
	Queues      map[string]map[string]int64 `json:"queues"`
	Held        map[string]int64            `json:"held"`
	Paused      map[string]bool             `json:"paused"`
	Workers     map[string]int64            `json:"workers"`  // live workers serving each queue
	Unserved    map[string]bool             `json:"unserved"` // queues with work and no live worker
	LiveWorkers int                         `json:"live_workers"`
	Quarantined int                         `json:"quarantined"`
}

func (h *Handler) overviewJSON(w http.ResponseWriter, r *http.Request) error {
	d, err := h.overviewOf(r)
	if err != nil {
		return err
	}
	s := overviewSample{Now: d.Now.UnixMilli(), Queues: map[string]map[string]int64{}, Held: map[string]int64{},
		Paused: map[string]bool{}, Workers: map[string]int64{}, Unserved: map[string]bool{}, LiveWorkers: d.LiveWorkers,
		Quarantined: d.Quarantined}
	for _, q := range d.Queues {
		counts := map[string]int64{}
		for _, c := range q.Cells {
			counts[string(c.State)] = c.Count
		}
		s.Queues[q.Queue] = counts
		s.Held[q.Queue] = q.Held
		s.Paused[q.Queue] = q.Paused
		s.Workers[q.Queue] = q.LiveWorkers
		s.Unserved[q.Queue] = q.Unserved
	}
	return writeJSON(w, s)
}

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(v)
}

// pageSize is how many jobs a listing page asks the store for.
const pageSize = 50

// filter is what a listing selects within its queue and state. The inspector's listing
// answers kind, partition, tag and fingerprint from the job indexes; an id is looked up
// alone.
type filter struct {
	Kind, Partition, Tag, Fingerprint, ID string
	// Oldest orders a page oldest first (ids are time-ordered); newest first otherwise.
	Oldest bool
}

// filterOf reads a listing's filter from its query or form. Values are taken as given,
// spaces included, as the CLI takes them: a partition, tag or id may end in a space, and
// a link to it (the tenants page's) must select it, not another.
func filterOf(q url.Values) filter {
	return filter{Kind: q.Get("kind"), Partition: q.Get("partition"), Tag: q.Get("tag"),
		Fingerprint: q.Get("fingerprint"), ID: q.Get("id"), Oldest: q.Get("order") == "oldest"}
}

// narrowed tells whether f selects less than its whole queue and state.
func (f filter) narrowed() bool {
	return f.Kind != "" || f.Partition != "" || f.Tag != "" || f.Fingerprint != "" || f.ID != ""
}

// MayBeShort tells whether a page of f may show fewer jobs than a full page and still
// have a next one: with two or more of partition, tag and fingerprint the listing walks
// the first one's index and checks the others (inspector.ListJobs).
func (f filter) MayBeShort() bool {
	n := 0
	for _, v := range []string{f.Partition, f.Tag, f.Fingerprint} {
		if v != "" {
			n++
		}
	}
	return n >= 2 && f.ID == ""
}

// partitionOnly tells whether f selects by partition alone, which the store counts.
func (f filter) partitionOnly() bool {
	return f.Partition != "" && f.Kind == "" && f.Tag == "" && f.Fingerprint == "" && f.ID == ""
}

func (f filter) matches(j *headgate.Job) bool {
	return (f.Kind == "" || j.Kind == f.Kind) && (f.Partition == "" || j.PartitionKey == f.Partition) &&
		(f.Tag == "" || slices.Contains(j.Tags, f.Tag)) && (f.Fingerprint == "" || j.Fingerprint == f.Fingerprint) &&
		(f.ID == "" || j.ID == f.ID)
}

// values renders f as a listing's query (without cursor).
func (f filter) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"kind": f.Kind, "partition": f.Partition, "tag": f.Tag, "fingerprint": f.Fingerprint, "id": f.ID} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if f.Oldest {
		v.Set("order", "oldest")
	}
	return v
}

// selection is a queue, a state and a filter: the jobs a listing shows and a bulk action
// on everything matching acts on.
type selection struct {
	Queue  string
	State  headgate.State
	Filter filter
}

// listedStates are the states a listing selects: every job state, and StateHeld for the
// available jobs a quarantined fingerprint holds back (the overview's Held column), which
// the store lists, counts and acts on by filter as it does a state.
var listedStates = append(headgate.States[:len(headgate.States):len(headgate.States)], headgate.StateHeld)

// listedState is the state a listing finds j in: StateHeld for a held available job.
func listedState(j *headgate.Job) headgate.State {
	if j.State == headgate.StateAvailable && j.Held {
		return headgate.StateHeld
	}
	return j.State
}

// countOf is a queue's count of a listed state.
func countOf(s inspector.QueueStats, st headgate.State) int64 {
	if st == headgate.StateHeld {
		return s.Held
	}
	return s.Counts[st]
}

func selectionOf(queue, state string, q url.Values) (selection, error) {
	s := selection{Queue: queue, State: headgate.State(state), Filter: filterOf(q)}
	if !slices.Contains(listedStates, s.State) {
		return s, &headgate.InvalidError{Field: "state", Reason: fmt.Sprintf("%q is not a job state", state)}
	}
	if err := headgate.ValidateQueueName("queue", queue); err != nil {
		return s, err
	}
	return s, nil
}

// page reads one page of the selection from cursor: the matching jobs, ordered, and the
// next cursor ("" at the end).
func (h *Handler) page(ctx context.Context, sel selection, cursor string) ([]*headgate.Job, string, error) {
	if sel.Filter.ID != "" {
		d, err := h.src.job.Job(ctx, sel.Filter.ID)
		if err != nil || d.Job.Queue != sel.Queue || listedState(d.Job) != sel.State || !sel.Filter.matches(d.Job) {
			return nil, "", nil
		}
		return []*headgate.Job{d.Job}, "", nil
	}
	// The job indexes answer the filter and keep the order (when each job entered the
	// state), newest first unless Oldest.
	p, err := h.src.lister.ListJobs(ctx, inspector.JobFilter{Queue: sel.Queue, State: sel.State, Kind: sel.Filter.Kind,
		Partition: sel.Filter.Partition, Tag: sel.Filter.Tag, Fingerprint: sel.Filter.Fingerprint},
		inspector.Page{Limit: pageSize, Oldest: sel.Filter.Oldest, Cursor: cursor})
	if err != nil {
		return nil, "", err
	}
	return p.Jobs, p.Next, nil
}

type jobsData struct {
	selection
	Jobs []*headgate.Job
	// InState is the exact number of the queue's jobs in the state; Matching is the
	// number the filter selects when it is known (no filter), else -1.
	InState  int64
	Matching int64
	Cursor   string
	NextURL  string
	FirstURL string
	Orders   []orderLink
	// States links the queue's other listings, the filter and order kept.
	States []orderLink
	Paused bool
}

type orderLink struct {
	Label, URL string
	Current    bool
}

func (h *Handler) jobs(w http.ResponseWriter, r *http.Request) error {
	sel, err := selectionOf(r.PathValue("queue"), r.PathValue("state"), r.URL.Query())
	if err != nil {
		return err
	}
	stats, err := h.src.stats.Stats(r.Context())
	if err != nil {
		return err
	}
	if err := knownQueue(stats, sel.Queue); err != nil {
		return err
	}
	cursor := r.URL.Query().Get("cursor")
	jobs, next, err := h.page(r.Context(), sel, cursor)
	if err != nil {
		return err
	}
	d := &jobsData{selection: sel, Jobs: jobs, Cursor: cursor, Matching: -1}
	for _, s := range stats {
		if s.Queue == sel.Queue {
			d.InState, d.Paused = countOf(s, sel.State), s.Paused
		}
	}
	switch f := sel.Filter; {
	case !f.narrowed():
		d.Matching = d.InState
	case f.partitionOnly():
		// A partition alone is counted (its counts): one read.
		counts, err := h.src.partitions.PartitionCounts(r.Context(), sel.Queue, f.Partition)
		if err != nil {
			return err
		}
		d.Matching = counts[sel.State]
	}
	here := baseOf(r) + "/queues/" + url.PathEscape(sel.Queue) + "/" + string(sel.State)
	q := sel.Filter.values()
	d.FirstURL = here + "?" + q.Encode()
	if next != "" {
		q.Set("cursor", next)
		d.NextURL = here + "?" + q.Encode()
	}
	for _, st := range listedStates {
		u := baseOf(r) + "/queues/" + url.PathEscape(sel.Queue) + "/" + url.PathEscape(string(st))
		if q := sel.Filter.values().Encode(); q != "" {
			u += "?" + q
		}
		d.States = append(d.States, orderLink{Label: string(st), URL: u, Current: st == sel.State})
	}
	for _, o := range []struct {
		label  string
		oldest bool
	}{{"newest first", false}, {"oldest first", true}} {
		f := sel.Filter
		f.Oldest = o.oldest
		d.Orders = append(d.Orders, orderLink{Label: o.label, URL: here + "?" + f.values().Encode(), Current: f.Oldest == sel.Filter.Oldest})
	}
	h.render(w, r, "jobs", sel.Queue+" · "+string(sel.State), d)
	return nil
}

type jobData struct {
	*inspector.JobDetail
	Fields   []fieldRow
	Payload  string
	Result   string
	Output   string
	Progress *progressView
	// Why is why the job is not running, one sentence per reason, most decisive first;
	// empty while it runs.
	Why []string
}

type progressView struct {
	*headgate.Progress
	Percent int
}

func (h *Handler) job(w http.ResponseWriter, r *http.Request) error {
	id := idOf(r)
	d, err := h.src.job.Job(r.Context(), id)
	if err != nil {
		return err
	}
	jd := &jobData{JobDetail: d, Fields: fieldRows(d.Job, "Payload"),
		Payload: h.payloadText(d.Job.Kind, d.Job.Payload), Result: blobText(d.Result), Output: blobText(d.Output)}
	if d.Progress != nil {
		pv := &progressView{Progress: d.Progress}
		if d.Progress.Total > 0 {
			pv.Percent = int(min(100, max(0, d.Progress.Current*100/d.Progress.Total)))
		}
		jd.Progress = pv
	}
	if d.Job.State != headgate.StateRunning {
		e, err := h.src.why.Why(r.Context(), id, nil)
		if err != nil {
			return err
		}
		for _, reason := range e.Reasons {
			jd.Why = append(jd.Why, reason.Sentence(e.Now))
		}
	}
	h.render(w, r, "job", "Job "+id, jd)
	return nil
}

func (h *Handler) quarantine(w http.ResponseWriter, r *http.Request) error {
	q, err := h.src.quarantine.Quarantined(r.Context())
	if err != nil {
		return err
	}
	h.render(w, r, "quarantine", "Quarantine", q)
	return nil
}

type rateRow struct {
	Class      string
	Tokens     string
	Configured bool
}

func (h *Handler) rates(w http.ResponseWriter, r *http.Request) error {
	g, err := h.src.rates.Gauges(r.Context(), &headgate.GaugesOptions{RateClasses: h.cfg.RateClasses})
	if err != nil {
		return err
	}
	rows := make([]rateRow, 0, len(h.cfg.RateClasses))
	for _, c := range h.cfg.RateClasses {
		t, ok := g.RateTokens[c]
		rows = append(rows, rateRow{Class: c, Tokens: strconv.FormatFloat(t, 'f', -1, 64), Configured: ok})
	}
	h.render(w, r, "rates", "Rate classes", map[string]any{"Now": g.Now, "Classes": rows})
	return nil
}

func (h *Handler) policy(w http.ResponseWriter, r *http.Request) error {
	p, err := h.src.policy.Policy(r.Context())
	if err != nil {
		return err
	}
	h.render(w, r, "policy", "Policy", policyRows(p))
	return nil
}

// policyRow is one field of the policy as headgate policy shows it: its name, its value
// (a duration in the one compact form) and whether the namespace stores it.
type policyRow struct{ Field, Value, Source string }

// policyRows are the policy's fields in headgate.PolicyFields order, named as the command
// and policy set name them, each with its source: "namespace" when the namespace stores it,
// "default" when each process falls back to its own default (this one's is shown).
func policyRows(p *headgate.Policy) []policyRow {
	rows := make([]policyRow, 0, len(headgate.PolicyFields))
	for _, f := range headgate.PolicyFields {
		v, _ := p.Value(f)
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			if d, err := time.ParseDuration(v); err == nil {
				v = humandur.String(d)
			}
		}
		src := "default"
		if slices.Contains(p.Stored, f) {
			src = "namespace"
		}
		rows = append(rows, policyRow{Field: f, Value: v, Source: src})
	}
	return rows
}

// knownQueue is a not-found error naming the namespace's queues when stats (its queues)
// hold no queue: a page of a mistyped queue would show nothing, which reads as a queue
// without such jobs.
func knownQueue(stats []inspector.QueueStats, queue string) error {
	if unknown, has := inspector.UnknownQueue(stats, queue); unknown {
		return fmt.Errorf("no queue %q in the namespace (it never had a job, a limit or a pause; %s): %w", queue, has, errNotFound)
	}
	return nil
}
