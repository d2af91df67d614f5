package chaos

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Ledger is the record of executions that handlers write, on a control Redis that no
// fault touches, so that what worker processes did survives their being killed.
type Ledger struct {
	rdb    *redis.Client
	prefix string
}

// NewLedger returns the ledger of one run on the control server rdb; run names the run
// and keeps runs apart.
func NewLedger(rdb *redis.Client, run string) *Ledger {
	return &Ledger{rdb: rdb, prefix: "chaos:" + run + ":"}
}

func (l *Ledger) key(name string) string { return l.prefix + name }

// Started records that an attempt of id with fence began: the ledger keeps each job's
// highest fence seen, which tells a later holder's attempt from an earlier one's.
func (l *Ledger) Started(ctx context.Context, id string, fence int64) error {
	return l.rdb.ZAddGT(ctx, l.key("fence"), redis.Z{Score: float64(fence), Member: id}).Err()
}

// Superseded reports whether an attempt of id with a higher fence than fence has begun.
func (l *Ledger) Superseded(ctx context.Context, id string, fence int64) (bool, error) {
	max, err := l.rdb.ZScore(ctx, l.key("fence"), id).Result()
	if err != nil {
		return false, err
	}
	return int64(max) > fence, nil
}

// Done records a completed execution of id (the handler returned success).
func (l *Ledger) Done(ctx context.Context, id string) error {
	pipe := l.rdb.TxPipeline()
	pipe.HIncrBy(ctx, l.key("done"), id, 1)
	pipe.RPush(ctx, l.key("events"), id)
	_, err := pipe.Exec(ctx)
	return err
}

// StaleWrite records a write attempted by a holder known to be superseded, and whether
// the store accepted it (it must not); detail says which, for the report.
func (l *Ledger) StaleWrite(ctx context.Context, accepted bool, detail string) error {
	field := "refused"
	if accepted {
		field = "accepted"
	}
	pipe := l.rdb.TxPipeline()
	pipe.HIncrBy(ctx, l.key("stale"), field, 1)
	if accepted {
		pipe.RPush(ctx, l.key("stale-accepted"), detail)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// StaleAccepted returns the details of the stale writes accepted.
func (l *Ledger) StaleAccepted(ctx context.Context) ([]string, error) {
	return l.rdb.LRange(ctx, l.key("stale-accepted"), 0, 99).Result()
}

// Stale returns the stale writes recorded: accepted and refused.
func (l *Ledger) Stale(ctx context.Context) (accepted, refused int, err error) {
	h, err := l.rdb.HGetAll(ctx, l.key("stale")).Result()
	if err != nil {
		return 0, 0, err
	}
	accepted, _ = strconv.Atoi(h["accepted"])
	refused, _ = strconv.Atoi(h["refused"])
	return accepted, refused, nil
}

// nextEvents pops up to n completion events (job ids) in the order they were recorded.
func (l *Ledger) nextEvents(ctx context.Context, n int) ([]string, error) {
	ids, err := l.rdb.LPopCount(ctx, l.key("events"), n).Result()
	if err == redis.Nil {
		return nil, nil
	}
	return ids, err
}

// DoneCounts returns how many completed executions each job had.
func (l *Ledger) DoneCounts(ctx context.Context) (map[string]int, error) {
	h, err := l.rdb.HGetAll(ctx, l.key("done")).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(h))
	for id, v := range h {
		out[id], _ = strconv.Atoi(v)
	}
	return out, nil
}
