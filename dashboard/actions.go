package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

// maxSelected bounds the job ids one action request may carry.
const maxSelected = 1000

// jobAction handles POST /jobs: retry, delete or cancel the selected jobs (form values
// "job") or every job matching a listing's filter (scope "matching"). Without confirm=1 it
// answers with a confirmation page showing how many jobs the action takes; with it, it
// starts the action and redirects to its operation page.
func (h *Handler) jobAction(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.refuse(w, r, http.StatusBadRequest, "bad form: "+err.Error())
		return
	}
	f := r.PostForm
	action := Action(f.Get("action"))
	if !slices.Contains([]Action{ActionRetry, ActionDelete, ActionCancel}, action) {
		h.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("action %q is not retry, delete or cancel", action))
		return
	}
	user, err := h.authorize(r, action)
	if err != nil {
		h.refuse(w, r, http.StatusForbidden, err.Error())
		return
	}
	op := &operation{Action: action, User: user, Back: backLink(r, f.Get("back"))}
	exact := true
	var run func(ctx context.Context, op *operation) string
	switch f.Get("scope") {
	case "matching":
		sel, err := selectionOf(f.Get("queue"), f.Get("state"), f)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if !takes(action, sel.State) {
			// Refused before a confirmation that would count the jobs and an operation
			// that would stop at its first batch: the store's bulk verb takes no such job.
			h.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("%s does not take %s jobs", action, sel.State))
			return
		}
		if op.Total, exact, err = h.countMatching(r, sel); err != nil {
			h.fail(w, r, err)
			return
		}
		op.Target = fmt.Sprintf("every %s job of queue %s%s", sel.State, sel.Queue, describeFilter(sel.Filter))
		run = func(ctx context.Context, op *operation) string { return h.actOnSelection(ctx, op, sel) }
	default:
		ids := slices.Compact(slices.Sorted(slices.Values(f["job"])))
		ids = slices.DeleteFunc(ids, func(id string) bool { return id == "" })
		if len(ids) == 0 {
			h.refuse(w, r, http.StatusBadRequest, "no job selected")
			return
		}
		if len(ids) > maxSelected {
			h.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("%d jobs selected, more than %d: act on everything matching the filter instead", len(ids), maxSelected))
			return
		}
		op.Total = int64(len(ids))
		op.Target = fmt.Sprintf("%d selected job(s)", len(ids))
		run = func(ctx context.Context, op *operation) string {
			for _, id := range ids {
				op.step(h.actOnJob(ctx, action, id), id)
			}
			return ""
		}
	}
	if f.Get("confirm") != "1" {
		h.confirm(w, r, op, exact)
		return
	}
	h.start(w, r, op, run)
}

// takes reports whether action's bulk verb takes jobs in state, as the jobs page offers
// its buttons: retry a finished job, delete one that is not running, cancel one that is
// not finished.
func takes(action Action, state headgate.State) bool {
	switch action {
	case ActionRetry:
		return state.Terminal()
	case ActionDelete:
		return state != headgate.StateRunning
	case ActionCancel:
		return !state.Terminal()
	}
	return false
}

// backLink is the page an operation links back to: back when it is a path of the
// dashboard, else the overview (the form field must not make a link elsewhere).
func backLink(r *http.Request, back string) string {
	u, err := url.Parse(back)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.ContainsAny(back, "\\\t\n\r") ||
		strings.HasPrefix(back, "//") || !strings.HasPrefix(u.Path, baseOf(r)+"/") {
		return baseOf(r) + "/"
	}
	return back
}

// countMatching is how many jobs sel selects: exact without a filter (the queue's count
// of the state) and for a partition alone (the partition's count), else the state's
// count as an upper bound (exact false). Each is one read, whatever the queue's size.
func (h *Handler) countMatching(r *http.Request, sel selection) (n int64, exact bool, err error) {
	f := sel.Filter
	if f.partitionOnly() {
		counts, err := h.src.partitions.PartitionCounts(r.Context(), sel.Queue, f.Partition)
		return counts[sel.State], true, err
	}
	stats, err := h.src.stats.Stats(r.Context())
	if err != nil {
		return 0, false, err
	}
	for _, s := range stats {
		if s.Queue == sel.Queue {
			n = countOf(s, sel.State)
		}
	}
	if f.ID != "" {
		return min(n, 1), false, nil
	}
	return n, !f.narrowed(), nil
}

func describeFilter(f filter) string {
	var parts []string
	for _, p := range [][2]string{{"kind", f.Kind}, {"partition", f.Partition}, {"tag", f.Tag}, {"fingerprint", f.Fingerprint}, {"id", f.ID}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+p[1])
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " with " + strings.Join(parts, ", ")
}

type confirmData struct {
	Op *operation
	// Exact is false when Total is only an upper bound (a filter the store cannot count).
	Exact  bool
	Fields url.Values
}

func (h *Handler) confirm(w http.ResponseWriter, r *http.Request, op *operation, exact bool) {
	fields := url.Values{}
	for k, v := range r.PostForm {
		if k != "confirm" {
			fields[k] = v
		}
	}
	h.render(w, r, "confirm", "Confirm "+string(op.Action), confirmData{Op: op, Exact: exact, Fields: fields})
}

// start runs op in the background and redirects to its page; run returns the
// operation's summary line ("" for none). The run outlives the request: each store call
// gets its own timeout. An action that changed something is logged before the operation
// shows as finished; one that changed nothing (a paused queue paused again, every job
// refused) is not: an audit line records a change, and the operation's page shows the rest.
func (h *Handler) start(w http.ResponseWriter, r *http.Request, op *operation, run func(ctx context.Context, op *operation) string) {
	op.Started = time.Now()
	h.ops.add(op)
	ctx := context.WithoutCancel(r.Context())
	go func() {
		result := run(ctx, op)
		if v := op.snapshot(); v.Done > 0 {
			h.log.Info("dashboard action", "user", op.User, "action", string(op.Action), "target", op.Target,
				"changed", v.Done, "refused", v.Refused, "operation", op.ID)
		}
		op.finish(result)
	}()
	http.Redirect(w, r, baseOf(r)+"/operations/"+op.ID, http.StatusSeeOther)
}

// actOnJob applies a job action to one job, with its own timeout.
func (h *Handler) actOnJob(ctx context.Context, action Action, id string) error {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.RequestTimeout)
	defer cancel()
	var err error
	switch action {
	case ActionRetry:
		_, err = h.src.jobs.Retry(ctx, id, nil)
	case ActionDelete:
		_, err = h.src.jobs.Delete(ctx, id)
	case ActionCancel:
		err = h.src.jobs.Cancel(ctx, id)
	default:
		err = fmt.Errorf("unknown action %q", action)
	}
	return err
}

// actOnSelection applies op's action to every job matching sel with the store's bulk
// verb: bounded batches through the job indexes, one script call each, oldest first, the
// operation's progress moving after each batch. Each run of the verb gets the request
// timeout; one that runs out after some batches resumes from the cursor it returned (a
// batch cut off in flight may have moved its jobs uncounted: they are not met again).
// An id filter selects one job, acted on alone.
func (h *Handler) actOnSelection(ctx context.Context, op *operation, sel selection) string {
	if sel.Filter.ID != "" {
		jobs, _, err := h.page(ctx, sel, "")
		if err != nil {
			return fmt.Sprintf("stopped: reading job %s failed: %v", sel.Filter.ID, err)
		}
		for _, j := range jobs {
			op.step(h.actOnJob(ctx, op.Action, j.ID), j.ID)
		}
		return ""
	}
	verb := map[Action]func(context.Context, inspector.JobFilter, *inspector.BulkOptions) (inspector.BulkResult, error){
		ActionRetry: h.src.jobs.BulkRetry, ActionDelete: h.src.jobs.BulkDelete, ActionCancel: h.src.jobs.BulkCancel,
	}[op.Action]
	f := inspector.JobFilter{Queue: sel.Queue, State: sel.State, Kind: sel.Filter.Kind, Partition: sel.Filter.Partition,
		Tag: sel.Filter.Tag, Fingerprint: sel.Filter.Fingerprint}
	var before inspector.BulkResult // what the runs before this one did
	cursor := ""
	for {
		rctx, cancel := context.WithTimeout(ctx, h.cfg.RequestTimeout)
		res, err := verb(rctx, f, &inspector.BulkOptions{Cursor: cursor, Progress: func(p inspector.BulkProgress) {
			op.progress(before.Moved+p.Moved, before.Skipped+p.Skipped)
		}})
		cancel()
		before.Moved, before.Skipped, before.Batches = before.Moved+res.Moved, before.Skipped+res.Skipped, before.Batches+res.Batches
		op.progress(before.Moved, before.Skipped)
		switch {
		case err == nil:
			return fmt.Sprintf("%d batch(es).", before.Batches) + h.heldAfterRetry(ctx, op.Action, sel.State, before.Moved)
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && res.Batches > 0 && res.Cursor != "":
			cursor = res.Cursor
		default:
			return fmt.Sprintf("stopped after %d batch(es): %v", before.Batches, err)
		}
	}
}

// heldAfterRetry is what a retry of quarantined jobs adds to its result: a retried job
// whose fingerprint stays quarantined is available but held with its siblings, which
// the counts alone read as jobs that will run.
func (h *Handler) heldAfterRetry(ctx context.Context, action Action, state headgate.State, moved int64) string {
	if action != ActionRetry || state != headgate.StateQuarantined || moved == 0 {
		return ""
	}
	q, err := h.src.quarantine.Quarantined(ctx)
	if err != nil || len(q) == 0 {
		return ""
	}
	return fmt.Sprintf(" A retried job whose fingerprint is still quarantined waits, held with its siblings, until it is released "+
		"(%d fingerprint(s) quarantined: see Quarantine).", len(q))
}

// queueAction handles POST /queues/{queue}/pause and /resume.
func (h *Handler) queueAction(action Action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		queue := r.PathValue("queue")
		if err := headgate.ValidateQueueName("queue", queue); err != nil {
			h.fail(w, r, err)
			return
		}
		// As the CLI without -create: pausing a queue the namespace does not know would
		// bring it into being, and the pause would wait there for the day the name is used.
		stats, err := h.src.stats.Stats(r.Context())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		i := slices.IndexFunc(stats, func(s inspector.QueueStats) bool { return s.Queue == queue })
		if i < 0 {
			h.refuse(w, r, http.StatusNotFound, fmt.Sprintf("no queue %q: it never had a job, a limit or a pause (headgate %s -create makes it)", queue, action))
			return
		}
		paused := stats[i].Paused
		h.startOne(w, r, action, "queue "+queue, "/", func(ctx context.Context) (string, error) {
			if action == ActionPause {
				if paused {
					return "", unchanged("queue " + queue + " was paused already")
				}
				return "queue " + queue + " paused", h.src.queues.Pause(ctx, queue)
			}
			if !paused {
				return "", unchanged("queue " + queue + " was running already")
			}
			return "queue " + queue + " resumed", h.src.queues.Resume(ctx, queue)
		})
	}
}

// quarantineAction handles POST /quarantine/release: lift a fingerprint's quarantine,
// and with retry=1 also retry the job that crashed into it.
func (h *Handler) quarantineAction(w http.ResponseWriter, r *http.Request) {
	fp, ok := h.requiredFormValue(w, r, "fingerprint")
	if !ok {
		return
	}
	// As the CLI: a fingerprint that is not quarantined is refused, not reported released
	// (a mistyped one would leave the one meant quarantined).
	quarantined := func(ctx context.Context) error {
		q, err := h.src.quarantine.Quarantined(ctx)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(q, func(f inspector.QuarantinedFingerprint) bool { return f.Fingerprint == fp }) {
			return fmt.Errorf("fingerprint %q is not quarantined; nothing released", fp)
		}
		return nil
	}
	if r.PostForm.Get("retry") != "1" {
		h.startOne(w, r, ActionReleaseQuarantine, "fingerprint "+fp, "/quarantine", func(ctx context.Context) (string, error) {
			if err := quarantined(ctx); err != nil {
				return "", err
			}
			n, err := h.src.quarantine.ReleaseQuarantine(ctx, fp)
			return fmt.Sprintf("released %s: %d held jobs back to admission", fp, n), err
		})
		return
	}
	h.startOne(w, r, ActionReleaseAndRetry, "fingerprint "+fp, "/quarantine", func(ctx context.Context) (string, error) {
		if err := quarantined(ctx); err != nil {
			return "", err
		}
		res, err := h.src.quarantine.ReleaseQuarantineAndRetry(ctx, fp)
		switch {
		case err != nil:
			return "", err
		case !res.Lifted: // released meanwhile by someone else
			return "", fmt.Errorf("fingerprint %q is not quarantined; nothing released", fp)
		case res.JobID == "": // its crashed job was retried already, or is gone: the release alone
			return fmt.Sprintf("released %s (%d held jobs back to admission); no job retried: the job that crashed into it was retried already or is gone",
				fp, res.Released), nil
		}
		return fmt.Sprintf("released %s (%d held jobs back to admission); job %s is %s", fp, res.Released, res.JobID, res.State), nil
	})
}

// requiredFormValue parses r's form and returns its value of field; when the form is
// bad or the value empty it answers 400 and returns false.
func (h *Handler) requiredFormValue(w http.ResponseWriter, r *http.Request, field string) (string, bool) {
	if err := r.ParseForm(); err != nil {
		h.refuse(w, r, http.StatusBadRequest, "bad form: "+err.Error())
		return "", false
	}
	v := r.PostForm.Get(field)
	if v == "" {
		h.refuse(w, r, http.StatusBadRequest, "no "+field+" given")
		return "", false
	}
	return v, true
}

// startOne authorizes and starts an operation of one store call, whose summary is shown
// when it succeeds; back is the page to return to, under the dashboard's prefix.
func (h *Handler) startOne(w http.ResponseWriter, r *http.Request, action Action, target, back string, call func(ctx context.Context) (string, error)) {
	user, err := h.authorize(r, action)
	if err != nil {
		h.refuse(w, r, http.StatusForbidden, err.Error())
		return
	}
	op := &operation{Action: action, User: user, Target: target, Total: 1, Back: baseOf(r) + back}
	h.start(w, r, op, func(ctx context.Context, op *operation) string {
		ctx, cancel := context.WithTimeout(ctx, h.cfg.RequestTimeout)
		defer cancel()
		summary, err := call(ctx)
		var same unchanged
		if errors.As(err, &same) {
			op.progress(0, 1)
			return string(same)
		}
		op.step(err, target)
		if err != nil {
			return ""
		}
		return summary
	})
}

func (h *Handler) operation(w http.ResponseWriter, r *http.Request) error {
	op := h.ops.get(r.PathValue("op"))
	if op == nil {
		return fmt.Errorf("operation %q: %w (the dashboard keeps its last %d operations, until it restarts)", r.PathValue("op"), errNotFound, keptOperations)
	}
	h.render(w, r, "operation", string(op.Action), op.snapshot())
	return nil
}

// maxProgressWait bounds how long a progress answer waits for the operation to finish.
const maxProgressWait = 10 * time.Second

// operationJSON answers an operation's progress; with wait=<ms> it answers when the
// operation finishes or that long has passed, so a client follows it without polling fast.
func (h *Handler) operationJSON(w http.ResponseWriter, r *http.Request) error {
	op := h.ops.get(r.PathValue("op"))
	if op == nil {
		return fmt.Errorf("operation %q: %w", r.PathValue("op"), errNotFound)
	}
	if ms, err := strconv.Atoi(r.URL.Query().Get("wait")); err == nil && ms > 0 {
		t := time.NewTimer(min(time.Duration(ms)*time.Millisecond, maxProgressWait))
		defer t.Stop()
		select {
		case <-op.finished:
		case <-t.C:
		case <-r.Context().Done():
		}
	}
	return writeJSON(w, op.snapshot())
}
