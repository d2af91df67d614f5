package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

type cronData struct {
	Now       time.Time
	Schedules []*inspector.ScheduleState
	NextURL   string
}

// cron lists the namespace's schedules in name order with their next and last fire, a
// page at a time.
func (h *Handler) cron(w http.ResponseWriter, r *http.Request) error {
	now, err := h.src.stats.Now(r.Context())
	if err != nil {
		return err
	}
	rows, next, err := h.src.schedules.Schedules(r.Context(), r.URL.Query().Get("cursor"), pageSize)
	if err != nil {
		return err
	}
	d := &cronData{Now: now, Schedules: rows}
	if next != "" {
		d.NextURL = baseOf(r) + "/cron?" + url.Values{"cursor": {next}}.Encode()
	}
	h.render(w, r, "cron", "Cron schedules", d)
	return nil
}

// scheduleAction handles POST /cron/pause, /cron/resume and /cron/run of the schedule
// named by the form value "name". The name travels in the form, not the path, because a
// schedule's name may hold a '/'.
func (h *Handler) scheduleAction(action Action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, ok := h.requiredFormValue(w, r, "name")
		if !ok {
			return
		}
		if err := headgate.ValidateName("name", name); err != nil {
			h.fail(w, r, err)
			return
		}
		h.startOne(w, r, action, "schedule "+name, "/cron", func(ctx context.Context) (string, error) {
			switch action {
			case ActionPauseSchedule:
				changed, err := h.src.schedules.PauseSchedule(ctx, name)
				return changedText(name, "paused", changed, err)
			case ActionResumeSchedule:
				changed, err := h.src.schedules.ResumeSchedule(ctx, name)
				return changedText(name, "resumed", changed, err)
			}
			res, err := h.src.schedules.RunScheduleNow(ctx, name)
			return fmt.Sprintf("schedule %s enqueued job %s (%s)", name, res.ID, res.State), err
		})
	}
}

// changedText is the result of a pause or resume; one that changed nothing is unchanged,
// which the operation counts skipped.
func changedText(name, done string, changed bool, err error) (string, error) {
	if err == nil && !changed {
		return "", unchanged(fmt.Sprintf("schedule %s was %s already", name, done))
	}
	return fmt.Sprintf("schedule %s %s", name, done), err
}
