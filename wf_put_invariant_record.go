package headgate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// InvariantGenerationsMax is the most previous generations kept of one invariant.
const InvariantGenerationsMax = 64

// InvariantStateRecord is one generation of a workloop invariant's state.
type InvariantStateRecord struct {
	LoopID    string
	Invariant string
	// RecordedAt is when it was recorded (ms precision); zero records the store time.
	RecordedAt time.Time
	State      []byte
}

// PutInvariantRecord makes rec the invariant's current generation; the old current
// joins the previous generations, and in the same script previous generations recorded
// before pruneBefore are removed (and any beyond InvariantGenerationsMax). It returns how
// many were removed.
func (s *Store) PutInvariantRecord(ctx context.Context, rec InvariantStateRecord, pruneBefore time.Time) (int64, error) {
	if err := validateRequired("LoopID", rec.LoopID, true); err != nil {
		return 0, err
	}
	if err := validateRequired("Invariant", rec.Invariant, true); err != nil {
		return 0, err
	}
	if len(rec.State) > MaxPayloadBytes {
		return 0, invalid("State", "is %d bytes, more than the %d byte limit", len(rec.State), MaxPayloadBytes)
	}
	recorded := int64(-1)
	if !rec.RecordedAt.IsZero() {
		if recorded = rec.RecordedAt.UnixMilli(); recorded < 0 {
			return 0, invalid("RecordedAt", "is before 1970")
		}
	}
	reply, err := s.run(ctx, scriptWfPutInvariantRecord, rec.LoopID, rec.LoopID, rec.Invariant, recorded, rec.State,
		pruneBefore.UnixMilli(), InvariantGenerationsMax)
	if err != nil {
		return 0, err
	}
	return asInt(reply, 0), nil
}

func decodeInvariant(loopID, invariant, stored string) (InvariantStateRecord, error) {
	at, state, ok := strings.Cut(stored, "\n")
	ms, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil {
		return InvariantStateRecord{}, fmt.Errorf("headgate: invariant %q of workloop %q: malformed generation", invariant, loopID)
	}
	r := InvariantStateRecord{LoopID: loopID, Invariant: invariant, RecordedAt: time.UnixMilli(ms)}
	if state != "" {
		r.State = []byte(state)
	}
	return r, nil
}

// CurrentInvariantRecord returns an invariant's current generation, or nil.
func (s *Store) CurrentInvariantRecord(ctx context.Context, loopID, invariant string) (*InvariantStateRecord, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	v, err := s.rdb.LIndex(ctx, s.keys.InvariantRecords(loopID, invariant), 0).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := decodeInvariant(loopID, invariant, v)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// InvariantRecordGenerations returns an invariant's previous generations, newest first.
func (s *Store) InvariantRecordGenerations(ctx context.Context, loopID, invariant string) ([]InvariantStateRecord, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	v, err := s.rdb.LRange(ctx, s.keys.InvariantRecords(loopID, invariant), 1, InvariantGenerationsMax).Result()
	if err != nil {
		return nil, err
	}
	out := make([]InvariantStateRecord, 0, len(v))
	for _, g := range v {
		r, err := decodeInvariant(loopID, invariant, g)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
