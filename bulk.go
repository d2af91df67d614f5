package headgate

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
)

// BulkBatchMax is the most jobs one call of a bulk verb moves: each batch is one script
// call, all or nothing.
const BulkBatchMax = 1000

// BulkOptions tune BulkCancel, BulkRetry and BulkDelete.
type BulkOptions struct {
	// DryRun counts the jobs the verb would move and writes nothing.
	DryRun bool
	// Cursor resumes an interrupted run: the Cursor of the BulkResult (or BulkProgress)
	// it returned. "" starts from the oldest job of the filter.
	Cursor string
	// BatchSize is the most jobs one script call moves. Defaults to BulkBatchMax, at most
	// BulkBatchMax.
	BatchSize int
	// KeepAttempts (BulkRetry only) keeps the attempts the jobs have used.
	KeepAttempts bool
	// Progress, when set, is called after each batch with the totals so far.
	Progress func(BulkProgress)
}

// BulkProgress is where a bulk verb stands after a batch.
type BulkProgress struct {
	// Moved counts the jobs cancelled, retried or deleted so far (in a dry run, those
	// that would be).
	Moved int64
	// Skipped counts the selected jobs the verb left alone: gone or moved since they
	// were indexed, unreadable, or (retry) whose strict unique key another job holds.
	Skipped int64
	// Batches is the number of script calls so far.
	Batches int
	// Cursor resumes the run after this batch (BulkOptions.Cursor); "" once done.
	Cursor string
}

// BulkResult is what a bulk verb did, or had done when it stopped on an error: resume it
// with Cursor.
type BulkResult = BulkProgress

// bulkVerb is one bulk script and the states it may select.
type bulkVerb struct {
	sc     script
	states []State
	what   string // for errors: "cancelled", ...
	// counted: the script takes, after extra, the jobs a dry run's earlier batches
	// counted, so that a dry run meets the queue's limit where the run would.
	counted bool
}

// runBulk walks the filter's jobs, oldest first, in batches of one script call each,
// until the selection is done, an error stops it, or ctx ends. Jobs that enter the
// state after the run started are left alone: the first call's store time bounds the
// selection, and the resume cursor carries that bound.
func (s *Store) runBulk(ctx context.Context, v bulkVerb, f JobFilter, o *BulkOptions, extra ...any) (BulkResult, error) {
	if o == nil {
		o = &BulkOptions{}
	}
	var res BulkResult
	if !slices.Contains(v.states, f.State) {
		names := make([]string, len(v.states))
		for i, st := range v.states {
			names[i] = string(st)
		}
		return res, invalid("State", "%q: only %s jobs can be %s", f.State, strings.Join(names, ", "), v.what)
	}
	batch := o.BatchSize
	switch {
	case batch == 0:
		batch = BulkBatchMax
	case batch < 0 || batch > BulkBatchMax:
		return res, invalid("BatchSize", "is %d, outside 1..%d", batch, BulkBatchMax)
	}
	until, at, id := "", "", ""
	if o.Cursor != "" {
		var err error
		if until, at, id, err = parseBulkCursor(o.Cursor); err != nil {
			return res, err
		}
	} else {
		now, err := s.Now(ctx)
		if err != nil {
			return res, err
		}
		until = strconv.FormatInt(now.Add(-f.OlderThan).UnixMilli(), 10)
	}
	for {
		sel, err := s.selection(f, batch, true, "", batch)
		if err != nil {
			return res, err
		}
		sel[8], sel[9], sel[10] = at, id, until
		dry := 0
		if o.DryRun {
			dry = 1
		}
		args := append(append(sel, dry), extra...)
		if v.counted {
			counted := int64(0)
			if o.DryRun {
				counted = res.Moved
			}
			args = append(args, counted)
		}
		reply, err := s.run(ctx, v.sc, "", args...)
		if err != nil {
			return res, err
		}
		res.Batches++
		res.Moved += asInt(reply, 3)
		res.Skipped += asInt(reply, 4)
		at, id = asString(reply, 0), asString(reply, 1)
		done := asInt(reply, 2) == 1
		res.Cursor = ""
		if !done {
			res.Cursor = encodeBulkCursor(until, at, id)
		}
		if o.Progress != nil {
			o.Progress(res)
		}
		if done {
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
}

// A bulk cursor is the selection's time bound, the entry time and the id of the last job
// looked at, joined by memberSep, base64url-encoded.
func encodeBulkCursor(until, at, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("b" + until + memberSep + at + memberSep + id))
}

func parseBulkCursor(c string) (until, at, id string, err error) {
	bad := invalid("Cursor", "%q is not a cursor a bulk verb returned", c)
	raw, derr := base64.RawURLEncoding.DecodeString(c)
	if derr != nil || len(raw) < 1 || raw[0] != 'b' {
		return "", "", "", bad
	}
	parts := strings.SplitN(string(raw[1:]), memberSep, 3)
	if len(parts) != 3 || parts[2] == "" {
		return "", "", "", bad
	}
	for _, n := range parts[:2] {
		if _, perr := strconv.ParseUint(n, 10, 63); perr != nil {
			return "", "", "", bad
		}
	}
	return parts[0], parts[1], parts[2], nil
}
