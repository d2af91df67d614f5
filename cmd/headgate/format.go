package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/humandur"
	"github.com/headgate/headgate/internal/msgpackjson"
)

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortTime is a table cell: UTC to the second, marked UTC.
func shortTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 MST")
}

// exactTime is a time a verb reports: UTC to the millisecond, marked UTC.
func exactTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 MST")
}

// longTime is a detail line: UTC to the millisecond, marked UTC, and how far from the
// store's now.
func longTime(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	s := exactTime(t)
	switch d := t.Sub(now).Round(time.Millisecond); {
	case d > 0:
		return s + " (in " + humandur.String(d) + ")"
	case d < 0:
		return s + " (" + humandur.String(-d) + " ago)"
	}
	return s + " (now)"
}

func printJob(w io.Writer, d *inspector.JobDetail, now time.Time) {
	j := d.Job
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k string, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t"+format+"\n", append([]any{k}, args...)...)
	}

	line("ID", "%s", j.ID)
	line("Kind", "%s", j.Kind)
	line("Queue", "%s", j.Queue)
	state := string(j.State)
	if j.Held {
		state += " (held: its fingerprint is quarantined)"
	}
	if d.Corrupt != "" {
		state += " (parked as corrupt: it will not run)"
	}
	line("State", "%s", state)
	if d.Corrupt != "" {
		line("Corrupt", "%s (repair that in Redis, then headgate delete %s: a delete parks it again while its data is unusable)", d.Corrupt, j.ID)
	}
	line("Attempts", "%d failed of %d (lost leases: %d, snoozes: %d)", j.Attempt, j.MaxAttempts, j.CrashAttempt, j.Snoozes)
	line("Priority", "%d", j.Priority)
	line("Partition", "%s", dash(j.PartitionKey))
	line("Fingerprint", "%s", dash(j.Fingerprint))
	if j.RateClass != "" {
		line("Rate class", "%s (weight %d)", j.RateClass, j.Weight)
	} else {
		line("Weight", "%d", j.Weight)
	}
	if j.StickyWorker != "" {
		line("Sticky worker", "%s", j.StickyWorker)
	}
	if len(j.Tags) > 0 {
		line("Tags", "%s", strings.Join(j.Tags, ", "))
	}
	if j.UniqueKey != "" {
		if j.UniqueWindow > 0 {
			line("Unique key", "%s (throttle window %s)", j.UniqueKey, humandur.String(j.UniqueWindow))
		} else {
			line("Unique key", "%s (until finished)", j.UniqueKey)
		}
	}
	line("Created", "%s", longTime(j.CreatedAt, now))
	line("Scheduled", "%s", longTime(j.ScheduledAt, now))
	if !j.FinalizedAt.IsZero() {
		line("Finished", "%s", longTime(j.FinalizedAt, now))
	}
	if j.Retention > 0 {
		line("Retention", "%s", humandur.String(j.Retention))
	}
	if j.State == headgate.StateRunning {
		line("Lease", "%s, fence %d, expires %s", j.LeaseID, j.Fence, longTime(j.LeaseExpiresAt, now))
	}
	if cp := j.Checkpoint; cp.InProgress != "" || len(cp.Done) > 0 {
		line("Steps", "in progress %s; done %s", dash(cp.InProgress), dash(strings.Join(cp.Done, ", ")))
		for _, step := range slices.Sorted(maps.Keys(cp.CrashesByStep)) {
			line("  crashes in "+step, "%d", cp.CrashesByStep[step])
		}
	}
	line("Payload", "%s (schema %d)", formatBytes(j.Payload, true), j.SchemaVersion)
	if p := d.Progress; p != nil {
		total := "?"
		if p.Total > 0 {
			total = fmt.Sprint(p.Total)
		}
		msg := ""
		if p.Message != "" {
			msg = " " + p.Message
		}
		line("Progress", "%d/%s%s (%s)", p.Current, total, msg, longTime(p.UpdatedAt, now))
	}
	if o := d.Output; o != nil {
		line("Output", "%s (schema %d, %s)", formatBytes(o.Bytes, false), o.SchemaVersion, longTime(o.UpdatedAt, now))
	}
	if r := d.Result; r != nil {
		line("Result", "%s (schema %d, %s)", formatBytes(r.Bytes, false), r.SchemaVersion, longTime(r.UpdatedAt, now))
	}
	tw.Flush()
	if len(d.Errors) > 0 {
		fmt.Fprintf(w, "\nErrors and logs (%d, oldest first):\n", len(d.Errors))
		for i, e := range d.Errors {
			at := ""
			if !e.At.IsZero() {
				at = longTime(e.At, now) + " "
			}
			fmt.Fprintf(w, "  %d. %s%s\n", i+1, at, e)
			for line := range strings.Lines(e.Stack) {
				fmt.Fprintf(w, "       %s", strings.TrimRight(line, "\n")+"\n")
			}
		}
	}
}

// maxShown bounds how much of a payload, output or result one line shows.
const maxShown = 512

// formatBytes renders opaque job bytes for a terminal: msgpack as JSON (payloads are
// msgpack), readable text as a quoted string, anything else as hex. For payloads
// msgpack is tried first; for results and output, text is.
func formatBytes(b []byte, payload bool) string {
	if len(b) == 0 {
		return "(empty)"
	}
	text := func() (string, bool) {
		if !utf8.Valid(b) || strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' }) {
			return "", false
		}
		return truncate(fmt.Sprintf("%q", b)), true
	}
	if !payload {
		if s, ok := text(); ok {
			return s
		}
	}
	if s, ok := msgpackJSON(b); ok {
		return truncate(s)
	}
	if s, ok := text(); ok {
		return s
	}
	h := hex.EncodeToString(b[:min(len(b), maxShown/2)])
	if len(b) > maxShown/2 {
		h += "…"
	}
	return fmt.Sprintf("%d bytes: %s", len(b), h)
}

// payloadFromJSON is the payload an operator gives as JSON (-payload) in the encoding of
// the payload it replaces, old: msgpack, as workers decode args (msgpackjson.Encode), for
// a new payload or one that was msgpack; the JSON as given for a payload that was JSON
// text (a program that enqueues through the Store and reads JSON). JSON text stored for a
// worker that decodes msgpack would park the job as undecodable at its next attempt.
func payloadFromJSON(s string, old []byte) ([]byte, error) {
	if len(old) > 0 && json.Valid(old) {
		if _, isMsgpack := msgpackjson.Decode(old); !isMsgpack {
			if !json.Valid([]byte(s)) {
				return nil, usagef("-payload is not JSON")
			}
			return []byte(s), nil
		}
	}
	b, err := msgpackjson.Encode([]byte(s))
	if err != nil {
		return nil, usagef("-payload is not JSON: %v", err)
	}
	return b, nil
}

// msgpackJSON decodes b as exactly one msgpack value and renders it as JSON.
func msgpackJSON(b []byte) (string, bool) {
	v, ok := msgpackjson.Decode(b)
	if !ok {
		return "", false
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(out), true
}

func truncate(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}
