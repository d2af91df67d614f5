package headgate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EnqueueResult is what Enqueue reports for one job: its state and run time after the
// call (for a replayed id, the existing job's).
type EnqueueResult struct {
	ID          string
	State       State
	ScheduledAt time.Time
	Replayed    bool
}

// Enqueue writes a batch of jobs, all or nothing. See lua/enqueue.lua for the order of
// checks. It returns *InvalidError, *IDConflictError, *QuarantinedError,
// *DuplicateError or *BackpressureError, and then nothing was written, with one
// exception: a call of one job whose unique key is held applies the job's debounce or
// replace mask to the holder (DuplicateError.Replaced says so), since that is the job's
// outcome. A batch of more jobs refused by a duplicate replaces nothing. With
// DurableReplicas set it may also return the results together with *NotDurableError:
// written, but not yet confirmed by enough replicas.
func (s *Store) Enqueue(ctx context.Context, jobs ...Envelope) ([]EnqueueResult, error) {
	if len(jobs) > MaxBatch {
		return nil, invalid("jobs", "batch of %d is more than %d", len(jobs), MaxBatch)
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	args, err := enqueueArgs(jobs)
	if err != nil {
		return nil, err
	}
	var reply []any
	if s.cfg.DurableReplicas > 0 {
		reply, err = s.runDurable(ctx, scriptEnqueue, args...)
	} else {
		reply, err = s.run(ctx, scriptEnqueue, "", args...)
	}
	if reply == nil {
		return nil, err
	}
	s.markFormat(ctx)
	out := make([]EnqueueResult, len(jobs))
	for i := range jobs {
		out[i] = EnqueueResult{
			ID:          jobs[i].ID,
			State:       State(asString(reply, 3*i)),
			ScheduledAt: fromMs(asInt(reply, 3*i+1)),
			Replayed:    asInt(reply, 3*i+2) == 1,
		}
	}
	return out, err // err: a *NotDurableError for a batch that was written
}

// enqueueFields is the number of a job's arguments to the enqueue script; a job with a
// partition, fingerprint, sticky worker, rate class, unique key, tags or a number off its
// default has a detail group too (lua/enqueue.lua).
const enqueueFields = 4

// enqueueArgs validates a batch of jobs and returns the enqueue script's arguments for
// them (lua/enqueue.lua): the count, the number of detail groups, each job's fields, then
// the detail groups.
func enqueueArgs(jobs []Envelope) ([]any, error) {
	args := make([]any, 0, 2+enqueueFields*len(jobs))
	args = append(args, len(jobs), 0)
	var details []any
	// A batch of one job, the most common, has no other to repeat its id or unique key.
	var ids map[string]bool
	var uniques map[string]string
	if len(jobs) > 1 {
		ids = make(map[string]bool, len(jobs))
		uniques = map[string]string{}
	}
	for i, e := range jobs {
		// The field's name is built only for an error: every job of every call passes here.
		field := func() string { return fmt.Sprintf("jobs[%d]", i) }
		e, err := normalizeFields(e)
		if err != nil {
			return nil, prefixField(field(), err)
		}
		uf := uniqueField(&e)
		if ids != nil {
			if ids[e.ID] {
				return nil, invalid(field()+".ID", "%q appears twice in the batch", e.ID)
			}
			ids[e.ID] = true
			if uf != "" {
				if other, ok := uniques[uf]; ok {
					return nil, invalid(field()+".UniqueKey", "%q is also the unique key of job %q in the batch", e.UniqueKey, other)
				}
				uniques[uf] = e.ID
			}
		}
		args = append(args, e.ID, e.Kind, e.Queue, e.Payload)
		nums := enqueueNumbers(&e)
		if e.PartitionKey != "" || e.Fingerprint != "" || e.StickyWorker != "" || e.RateClass != "" || uf != "" ||
			len(e.Tags) > 0 || nums != "" {
			details = append(details, i+1, e.PartitionKey, e.Fingerprint, e.StickyWorker, e.RateClass, uf,
				strings.Join(e.Tags, "\n"), nums)
			args[1] = args[1].(int) + 1
		}
	}
	return append(args, details...), nil
}

// enqueueNumbers is the numbers argument of a job (lua/enqueue.lua): "" when every one is
// at its default, else all of them joined by ",". Each script argument costs Redis about
// as much as a small command, and most jobs keep their numbers at the defaults.
func enqueueNumbers(e *Envelope) string {
	pending := int64(0)
	if e.Pending {
		pending = 1
	}
	nums := [...]int64{int64(e.Priority), unixMs(e.ScheduledAt), ms(e.Retention), int64(e.MaxAttempts),
		int64(e.SchemaVersion), int64(e.Weight), ms(e.UniqueWindow), int64(e.UniqueReplace),
		ms(e.UniqueDebounce), pending, ms(e.ScheduledIn)}
	if nums == [...]int64{0, 0, 0, MaxAttemptsDefault, SchemaVersionDefault, WeightDefault, 0, 0, 0, 0, 0} {
		return ""
	}
	b := make([]byte, 0, 64)
	for i, n := range nums {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return string(b)
}
