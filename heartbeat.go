package headgate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Heartbeat bounds.
const (
	// WorkerRetention is how long a worker that stopped beating stays listed (Workers,
	// `headgate workers`, why's "pinned to a worker not seen since"), after which the
	// heartbeats of other workers remove it.
	WorkerRetention = 24 * time.Hour
	// heartbeatPrune is the most unseen workers one heartbeat removes.
	heartbeatPrune = 16
)

// Heartbeat is what a worker tells the store about itself on each beat.
type Heartbeat struct {
	ID          string   // the worker's id (worker.Config.ID)
	Host        string   // the host it runs on
	PID         int      // its process id
	Queues      []string // the queues it admits from, in order
	Kinds       []string // the job kinds it has handlers for
	Concurrency int      // how many jobs it runs at once
	InFlight    int      // the jobs it was running at the beat
	// Started is when the worker started (store time).
	Started time.Time
	// Liveness is how long after this beat the worker counts as live: a worker not seen
	// for longer is dead (or gone). 0 marks a worker that stopped.
	Liveness time.Duration
}

// WorkerStatus is a worker's latest heartbeat and what the store clock makes of it.
type WorkerStatus struct {
	Heartbeat
	LastSeen time.Time // store time of the last beat
	// LiveUntil is LastSeen + Liveness: the worker is live until then.
	LiveUntil time.Time
	// Live is whether LiveUntil is still ahead of the store clock.
	Live bool
	// Stopped is whether the last beat was a stopping worker's (Liveness 0).
	Stopped bool
}

// heartbeatJSON is the stored record (keys.Workers); lua/why.lua and lua/heartbeat.lua
// read its queues and kinds.
type heartbeatJSON struct {
	ID          string   `json:"id"`
	Host        string   `json:"host"`
	PID         int      `json:"pid"`
	Queues      []string `json:"queues"`
	Kinds       []string `json:"kinds"`
	Concurrency int      `json:"concurrency"`
	InFlight    int      `json:"in_flight"`
	Started     int64    `json:"started"`
	Liveness    int64    `json:"liveness"`
}

// Heartbeat records the worker's heartbeat and returns the store time it was recorded
// at. It also removes, a few at a time, workers not seen for WorkerRetention.
func (s *Store) Heartbeat(ctx context.Context, hb Heartbeat) (time.Time, error) {
	if err := validateRequired("ID", hb.ID, false); err != nil {
		return time.Time{}, err
	}
	if len(hb.Queues) == 0 {
		return time.Time{}, invalid("Queues", "is empty")
	}
	for i, q := range hb.Queues {
		if err := validateRequired(fmt.Sprintf("Queues[%d]", i), q, false); err != nil {
			return time.Time{}, err
		}
	}
	switch {
	case hb.Liveness < 0:
		return time.Time{}, invalid("Liveness", "cannot be negative (%s)", hb.Liveness)
	case hb.Concurrency < 0 || hb.InFlight < 0:
		return time.Time{}, invalid("Concurrency", "and InFlight cannot be negative (%d, %d)", hb.Concurrency, hb.InFlight)
	}
	kinds := hb.Kinds
	if kinds == nil {
		kinds = []string{} // a JSON list, as the readers expect
	}
	rec, err := json.Marshal(heartbeatJSON{ID: hb.ID, Host: hb.Host, PID: hb.PID,
		Queues: hb.Queues, Kinds: kinds, Concurrency: hb.Concurrency,
		InFlight: hb.InFlight, Started: unixMs(hb.Started), Liveness: ms(hb.Liveness)})
	if err != nil {
		return time.Time{}, err
	}
	args := []any{hb.ID, rec, ms(hb.Liveness), ms(WorkerRetention), heartbeatPrune, len(hb.Queues)}
	for _, q := range hb.Queues {
		args = append(args, q)
	}
	reply, err := s.run(ctx, scriptHeartbeat, "", args...)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(asInt(reply, 0)), nil
}

// Workers returns every listed worker by id, live or not: those seen within
// WorkerRetention.
func (s *Store) Workers(ctx context.Context) ([]WorkerStatus, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	now, err := s.Now(ctx)
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	recs := pipe.HGetAll(ctx, s.keys.Workers())
	seen := pipe.ZRangeWithScores(ctx, s.keys.WorkersSeen(), 0, -1)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]WorkerStatus, 0, len(seen.Val()))
	for _, z := range seen.Val() {
		id, _ := z.Member.(string)
		ws := WorkerStatus{Heartbeat: Heartbeat{ID: id}, LastSeen: time.UnixMilli(int64(z.Score))}
		var r heartbeatJSON
		if raw, ok := recs.Val()[id]; ok && json.Unmarshal([]byte(raw), &r) == nil {
			ws.Heartbeat = Heartbeat{ID: id, Host: r.Host, PID: r.PID, Queues: r.Queues, Kinds: r.Kinds,
				Concurrency: r.Concurrency, InFlight: r.InFlight, Started: fromMs(r.Started),
				Liveness: durationMs(r.Liveness)}
		}
		ws.LiveUntil = ws.LastSeen.Add(ws.Liveness)
		ws.Live = ws.LiveUntil.After(now)
		ws.Stopped = ws.Liveness == 0
		out = append(out, ws)
	}
	slices.SortFunc(out, func(a, b WorkerStatus) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
