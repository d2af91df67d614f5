package headgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// WorkloopRecord is a long-lived loop the runtime checks on a schedule.
type WorkloopRecord struct {
	LoopID string
	// NextCheckAt is when the loop is due next (ms precision); zero: not scheduled.
	NextCheckAt time.Time
	// Spec is the runtime's own description of the loop, kept as given.
	Spec []byte
}

type workloopJSON struct {
	LoopID      string `json:"loop_id"`
	NextCheckAt *int64 `json:"next_check_at,omitempty"`
	Spec        []byte `json:"spec,omitempty"`
}

func encodeWorkloop(r WorkloopRecord) ([]byte, error) {
	j := workloopJSON{LoopID: r.LoopID, Spec: r.Spec}
	if !r.NextCheckAt.IsZero() {
		ms := r.NextCheckAt.UnixMilli()
		j.NextCheckAt = &ms
	}
	return json.Marshal(j)
}

func decodeWorkloop(id string, row []byte) (*WorkloopRecord, error) {
	var j workloopJSON
	dec := json.NewDecoder(strings.NewReader(string(row)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("headgate: workloop %q: %w", id, err)
	}
	if j.LoopID != id {
		return nil, fmt.Errorf("headgate: workloop %q: record names %q", id, j.LoopID)
	}
	r := &WorkloopRecord{LoopID: j.LoopID, Spec: j.Spec}
	if j.NextCheckAt != nil {
		r.NextCheckAt = time.UnixMilli(*j.NextCheckAt)
	}
	return r, nil
}

// probeNextCheck reads only the next check time of row bytes, as a raw write indexes
// them: "" when the bytes carry none or do not decode (never due, still listed).
func probeNextCheck(row []byte) string {
	var probe struct {
		NextCheckAt *int64 `json:"next_check_at"`
	}
	if json.Unmarshal(row, &probe) != nil || probe.NextCheckAt == nil || *probe.NextCheckAt < 0 {
		return ""
	}
	return strconv.FormatInt(*probe.NextCheckAt, 10)
}

// UndecodableWorkloop is a stored workloop row that does not decode.
type UndecodableWorkloop struct {
	LoopID string
	Error  string
}

// WorkloopListing is one page of ListWorkloops: undecodable rows are listed apart,
// never dropped.
type WorkloopListing struct {
	Workloops   []*WorkloopRecord
	Undecodable []UndecodableWorkloop
}

// GetWorkloop returns a workloop, nil when absent, or an error when its row does not
// decode.
func (s *Store) GetWorkloop(ctx context.Context, loopID string) (*WorkloopRecord, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	row, err := s.rdb.HGet(ctx, s.keys.Workloops(), loopID).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeWorkloop(loopID, row)
}

// ListWorkloops returns a page of workloops in id order (undecodable rows apart), and
// the cursor of the next page ("" at the end).
func (s *Store) ListWorkloops(ctx context.Context, cursor string, limit int) (*WorkloopListing, string, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, "", err
	}
	ids, next, err := s.lexPage(ctx, s.keys.WorkloopIndex(), "-", "+", cursor, limit)
	if err != nil {
		return nil, "", err
	}
	out := &WorkloopListing{}
	rows, err := s.workloopRows(ctx, ids)
	if err != nil {
		return nil, "", err
	}
	for i, row := range rows {
		if row == nil {
			continue
		}
		r, err := decodeWorkloop(ids[i], row)
		if err != nil {
			out.Undecodable = append(out.Undecodable, UndecodableWorkloop{LoopID: ids[i], Error: err.Error()})
			continue
		}
		out.Workloops = append(out.Workloops, r)
	}
	return out, next, nil
}

func (s *Store) workloopRows(ctx context.Context, ids []string) ([][]byte, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	v, err := s.rdb.HMGet(ctx, s.keys.Workloops(), ids...).Result()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(v))
	for i, x := range v {
		if row, ok := x.(string); ok {
			out[i] = []byte(row)
		}
	}
	return out, nil
}

// DueWorkloops returns up to limit workloops whose next check is at or before asOf,
// earliest first. It reads due rows only, never a decode per sleeping loop; a due row
// that does not decode is left out here and stays in ListWorkloops.
func (s *Store) DueWorkloops(ctx context.Context, asOf time.Time, limit int) ([]*WorkloopRecord, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	ids, err := s.rdb.ZRangeByScore(ctx, s.keys.WorkloopsDue(), &redis.ZRangeBy{Min: "-inf",
		Max: strconv.FormatInt(asOf.UnixMilli(), 10), Count: int64(limit)}).Result()
	if err != nil {
		return nil, err
	}
	rows, err := s.workloopRows(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []*WorkloopRecord
	for i, row := range rows {
		if row == nil {
			continue
		}
		if r, err := decodeWorkloop(ids[i], row); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}
