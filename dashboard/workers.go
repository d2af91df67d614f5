package dashboard

import (
	"net/http"
	"time"

	"github.com/headgate/headgate/inspector"
)

type workersData struct {
	Now     time.Time
	Workers []inspector.WorkerStatus
	Live    int
}

// workers lists the workers whose heartbeats the namespace keeps, live ones first.
func (h *Handler) workers(w http.ResponseWriter, r *http.Request) error {
	d, err := h.workersOf(r)
	if err != nil {
		return err
	}
	h.render(w, r, "workers", "Workers", d)
	return nil
}

func (h *Handler) workersOf(r *http.Request) (*workersData, error) {
	now, err := h.src.stats.Now(r.Context())
	if err != nil {
		return nil, err
	}
	ws, err := h.src.workers.Workers(r.Context())
	if err != nil {
		return nil, err
	}
	return &workersData{Now: now, Workers: ws, Live: liveCount(ws)}, nil
}

func liveCount(ws []inspector.WorkerStatus) int {
	n := 0
	for _, w := range ws {
		if w.Live {
			n++
		}
	}
	return n
}
