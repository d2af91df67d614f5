package rqueue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/headgate/headgate"
)

// optionOfField maps the envelope fields the store names in its errors to the option a
// caller of this package set. Fields the client fills from its Config are named there
// when the call left the option unset.
var optionOfField = map[string]string{
	"ID":             ".ID",
	"Queue":          ".Queue",
	"PartitionKey":   ".Partition",
	"Fingerprint":    ".Fingerprint",
	"Priority":       ".Priority",
	"StickyWorker":   ".Sticky",
	"ScheduledAt":    ".ScheduledAt",
	"ScheduledIn":    ".ScheduledIn",
	"Retention":      ".Retention",
	"MaxAttempts":    ".MaxAttempts",
	"Weight":         ".Weight",
	"Tags":           ".Tags",
	"RateClass":      ".RateClass",
	"UniqueKey":      ".Unique.Key",
	"UniqueWindow":   ".Unique.Window",
	"UniqueDebounce": ".Unique.Debounce",
	"UniqueReplace":  ".Unique.Replace",
}

// callerFields rewrites an *headgate.InvalidError about the store's envelope
// ("jobs[0].PartitionKey") into one about what the caller set ("EnqueueOpts.Partition");
// jobField(i) gives the argument and option names of the batch's i-th job. Other errors
// pass unchanged.
func callerFields(err error, jobField func(i int) (argsField, optsField string)) error {
	var inv *headgate.InvalidError
	if !errors.As(err, &inv) {
		return err
	}
	var i int
	var rest string
	if n, _ := fmt.Sscanf(inv.Field, "jobs[%d]", &i); n != 1 {
		return err
	}
	_, rest, ok := strings.Cut(inv.Field, "].")
	if !ok {
		return err
	}
	argsField, optsField := jobField(i)
	name, tail := rest, ""
	if j := strings.IndexAny(rest, ".["); j >= 0 {
		name, tail = rest[:j], rest[j:]
	}
	var field string
	switch {
	case name == "Kind":
		field = argsField + ".Kind()"
	case name == "Payload":
		field = argsField + " (encoded with msgpack)"
	case optionOfField[name] != "":
		field = optsField + optionOfField[name] + tail
	default:
		return err
	}
	return &headgate.InvalidError{Field: field, Reason: inv.Reason}
}

// maxQuotedBytes bounds a caller's value (an id, a key) quoted in an error message.
const maxQuotedBytes = 200

// quote is %q of s, cut to its first 200 bytes (and marked so) when longer: an error
// message stays readable whatever the caller passed.
func quote(s string) string {
	if len(s) <= maxQuotedBytes {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…(%d bytes)", s[:maxQuotedBytes], len(s))
}
