package dashboard

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// operation is one action in progress or done: what the operation page shows and its
// progress bar follows.
type operation struct {
	ID     string
	Action Action
	// Target says what the action is on: "3 selected jobs", "queue q", ...
	Target string
	User   string
	// Back is where the operation page links when it is done.
	Back    string
	Started time.Time
	// finished is closed when the operation is done, for answers that wait for it.
	finished chan struct{}

	mu sync.Mutex
	// Total is how many jobs the action will look at: exact for a selection, the state's
	// count (an upper bound) for a filter the store cannot count.
	Total int64
	// Done is how many it changed; Refused how many the store refused (their first
	// errors are in Errors); Skipped how many a bulk verb left alone (gone or changed
	// since they were indexed).
	Done     int64
	Refused  int64
	Skipped  int64
	Errors   []string
	Finished bool
	// Result is a one-line summary once finished.
	Result string
}

// maxOperationErrors bounds the refusals an operation keeps to show.
const maxOperationErrors = 20

func (o *operation) step(err error, id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err == nil {
		o.Done++
		return
	}
	o.Refused++
	if len(o.Errors) < maxOperationErrors {
		o.Errors = append(o.Errors, id+": "+err.Error())
	}
}

// unchanged is what a one-target action's call returns when its target was already as
// asked (a paused queue paused again): the operation counts it skipped, not changed, and
// its result is the message.
type unchanged string

func (u unchanged) Error() string { return string(u) }

// progress sets a bulk verb's totals so far.
func (o *operation) progress(done, skipped int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Done, o.Skipped = done, skipped
}

func (o *operation) finish(result string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Finished, o.Result = true, result
	close(o.finished)
	o.Total = o.Done + o.Refused + o.Skipped
}

// snapshot copies the operation's state for a page or a JSON answer.
func (o *operation) snapshot() operationView {
	o.mu.Lock()
	defer o.mu.Unlock()
	processed := o.Done + o.Refused + o.Skipped
	total := max(o.Total, processed)
	if o.Finished {
		total = processed
	}
	return operationView{ID: o.ID, Action: o.Action, Target: o.Target, User: o.User, Back: o.Back, Started: o.Started,
		Total: total, Done: o.Done, Refused: o.Refused, Skipped: o.Skipped, Processed: processed,
		Errors: append([]string{}, o.Errors...), Finished: o.Finished, Result: o.Result,
		StartedJSON: o.Started.UTC().Format(jsonTimeLayout)}
}

// jsonTimeLayout is how a time reads in the dashboard's JSON: RFC 3339 with its zone, to
// the millisecond, as the CLI's -json documents write times.
const jsonTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// operationView is an operation at one moment.
type operationView struct {
	ID        string    `json:"id"`
	Action    Action    `json:"action"`
	Target    string    `json:"target"`
	User      string    `json:"user"` // "" when the dashboard does not know who acted
	Back      string    `json:"back"`
	Started   time.Time `json:"-"` // the page's; JSON has StartedJSON
	Total     int64     `json:"total"`
	Done      int64     `json:"done"`
	Refused   int64     `json:"refused"`
	Skipped   int64     `json:"skipped"`
	Processed int64     `json:"processed"`
	Errors    []string  `json:"errors"` // [] when none
	Finished  bool      `json:"finished"`
	Result    string    `json:"result"` // "" until finished, and for actions without a summary

	// StartedJSON is Started as progress.json has it: RFC 3339 in UTC to the
	// millisecond, as the CLI's -json documents write times.
	StartedJSON string `json:"started"`
}

// operations are the dashboard's recent operations, by id.
type operations struct {
	mu   sync.Mutex
	byID map[string]*operation
	ids  []string // oldest first
}

// keptOperations bounds the operations the dashboard remembers.
const keptOperations = 100

func newOperations() *operations { return &operations{byID: map[string]*operation{}} }

func (ops *operations) add(o *operation) {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	o.ID = hex.EncodeToString(b[:])
	o.finished = make(chan struct{})
	ops.mu.Lock()
	defer ops.mu.Unlock()
	ops.byID[o.ID] = o
	ops.ids = append(ops.ids, o.ID)
	if len(ops.ids) > keptOperations {
		delete(ops.byID, ops.ids[0])
		ops.ids = ops.ids[1:]
	}
}

func (ops *operations) get(id string) *operation {
	ops.mu.Lock()
	defer ops.mu.Unlock()
	return ops.byID[id]
}
