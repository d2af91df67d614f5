package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/humandur"
)

// workflowStatuses are the statuses the workflow listing filters by.
var workflowStatuses = []headgate.WorkflowStatus{headgate.WorkflowRunning, headgate.WorkflowPaused,
	headgate.WorkflowCompleted, headgate.WorkflowFailed, headgate.WorkflowCancelled, headgate.WorkflowTerminated,
	headgate.WorkflowContinuedAsNew}

type workflowsData struct {
	Type, Status, Parent string
	Statuses             []headgate.WorkflowStatus
	Workflows            []*headgate.WorkflowSummary
	NextURL              string
}

// workflows lists workflows newest started last (the store's order), filtered by type,
// status and parent, a page at a time.
func (h *Handler) workflows(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	// Taken as given, spaces included: a workflow's children link must select its
	// children, not those of the id without its spaces.
	d := &workflowsData{Type: q.Get("type"), Status: q.Get("status"), Parent: q.Get("parent"), Statuses: workflowStatuses}
	f := headgate.WorkflowFilter{WorkflowType: d.Type, Status: headgate.WorkflowStatus(d.Status), Parent: d.Parent}
	rows, next, err := h.src.workflows.Query(r.Context(), f, q.Get("cursor"), pageSize)
	if err != nil {
		return err
	}
	d.Workflows = rows
	if next != "" {
		v := url.Values{"type": {d.Type}, "status": {d.Status}, "parent": {d.Parent}, "cursor": {next}}
		d.NextURL = baseOf(r) + "/workflows?" + v.Encode()
	}
	h.render(w, r, "workflows", "Workflows", d)
	return nil
}

// historyPage is how many events the workflow page shows at once.
const historyPage = 200

type workflowData struct {
	*headgate.WorkflowSummary
	Events  []eventRow
	NextURL string
}

// eventRow is one event of the timeline: its offset from the workflow's start and what
// it carries, rendered.
type eventRow struct {
	headgate.Event
	Offset  string
	Details []fieldRow
}

func (h *Handler) workflow(w http.ResponseWriter, r *http.Request) error {
	id := idOf(r)
	wf, err := h.src.workflows.GetWorkflow(r.Context(), id)
	if err != nil {
		return err
	}
	from := int64(1)
	if v := r.URL.Query().Get("from"); v != "" {
		if from, err = strconv.ParseInt(v, 10, 64); err != nil || from < 1 {
			return &headgate.InvalidError{Field: "from", Reason: fmt.Sprintf("%q is not a sequence number", v)}
		}
	}
	events, next, err := h.src.workflows.ReadHistoryFrom(r.Context(), id, from, historyPage)
	if err != nil {
		return err
	}
	d := &workflowData{WorkflowSummary: wf}
	for _, e := range events {
		row := eventRow{Event: e, Details: h.eventDetails(wf.WorkflowType, e)}
		if !wf.StartedAt.IsZero() {
			row.Offset = "+" + humandur.String(e.RecordedAt.Sub(wf.StartedAt))
		}
		d.Events = append(d.Events, row)
	}
	if next != 0 {
		u, sep := escapeID(id), "?"
		if strings.HasPrefix(u, "?") {
			sep = "&" // the id is in the query already
		}
		d.NextURL = baseOf(r) + "/workflows/" + u + sep + "from=" + strconv.FormatInt(next, 10)
	}
	h.render(w, r, "workflow", "Workflow "+id, d)
	return nil
}

// eventDetails lists what an event carries besides its kind and name, payloads decoded
// (JSON first, as the runtime records them) and passed through Config.Redact under the workflow's type.
func (h *Handler) eventDetails(workflowType string, e headgate.Event) []fieldRow {
	var rows []fieldRow
	for _, r := range fieldRows(e, "Seq", "RecordedAt", "Kind", "Name", "Attempt", "Input", "Result", "Payload", "Error") {
		if r.Value != "—" && r.Value != "0" {
			rows = append(rows, r)
		}
	}
	for _, b := range []struct {
		name string
		v    []byte
	}{{"Input", e.Input}, {"Result", e.Result}, {"Payload", e.Payload}} {
		if len(b.v) > 0 {
			rows = append(rows, fieldRow{Name: b.name, Value: h.workflowPayloadText(workflowType, b.v)})
		}
	}
	if e.Error != nil {
		rows = append(rows, fieldRow{Name: "Error", Value: e.Error.Message})
		if len(e.Error.Details) > 0 {
			rows = append(rows, fieldRow{Name: "Error details", Value: h.workflowPayloadText(workflowType, e.Error.Details)})
		}
	}
	return rows
}
