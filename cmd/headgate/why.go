package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

// whyOpts are the flags of why and workers.
type whyOpts struct {
	json    bool
	quantum int
}

func whyFlags(fs *flag.FlagSet, c *cli) {
	fs.BoolVar(&c.why.json, "json", false, "print one JSON document on stdout")
	fs.IntVar(&c.why.quantum, "quantum", 1, "the workers' quantum (worker.Config.Quantum) to count the jobs ahead with: `N` weight units a partition turn")
}

func workersFlags(fs *flag.FlagSet, c *cli) {
	fs.BoolVar(&c.why.json, "json", false, "print one JSON document on stdout")
}

// whyJSON is why's -json document.
type whyJSON struct {
	ID string `json:"id"`
	// State is null when the job's data could not be read, nor so its state (a
	// corrupt reason says why).
	State   *string      `json:"state"`
	Now     *string      `json:"now"`
	Reasons []reasonJSON `json:"reasons"`
}

// reasonJSON is one reason: its name, its sentence and its numbers (the fields of
// headgate.Reason that apply, times as jsonTime writes them).
type reasonJSON struct {
	headgate.Reason
	Sentence   string  `json:"sentence"`
	Remedy     string  `json:"remedy,omitempty"` // the command that lifts it, where one does
	At         *string `json:"at,omitempty"`
	Since      *string `json:"since,omitempty"`
	LeaseUntil *string `json:"lease_until,omitempty"`
	LastSeen   *string `json:"last_seen,omitempty"`
}

func cmdWhy(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 1); err != nil {
		return err
	}
	if c.why.quantum < 1 || c.why.quantum > headgate.MaxWeight {
		return usagef("-quantum %d is outside 1..%d", c.why.quantum, headgate.MaxWeight)
	}
	e, err := c.insp.Why(ctx, args[0], &inspector.WhyOptions{Quantum: c.why.quantum})
	if errors.Is(err, headgate.ErrJobNotFound) {
		// Not a job: a workflow id is explained by its run's reasons.
		we, wfErr := c.insp.WhyWorkflow(ctx, args[0])
		switch {
		case errors.Is(wfErr, headgate.ErrWorkflowNotFound):
			return fmt.Errorf("%w, and no workflow has that id", err)
		case wfErr != nil:
			return wfErr
		}
		if !c.why.json {
			_, err := fmt.Fprint(c.stdout, we.String())
			return err
		}
		return c.printJSON(workflowWhyDoc(we))
	}
	if err != nil {
		return err
	}
	pausedWorkflow := ""
	if e.State == headgate.StatePending {
		// A workflow's staged task or step job waits for its workflow's resume.
		j, err := c.insp.Job(ctx, e.ID)
		if err != nil && !errors.Is(err, headgate.ErrJobNotFound) {
			return err
		}
		if err == nil {
			pausedWorkflow = stagedWorkflowOf(e.ID, e.State, j.Job.Kind)
		}
	}
	if !c.why.json {
		_, err := fmt.Fprint(c.stdout, e.String()+remediesText(e, pausedWorkflow))
		return err
	}
	return c.printJSON(whyDoc(e, pausedWorkflow))
}

// whyDoc is a job's explanation as why's -json document (pausedWorkflow as remedy takes
// it).
func whyDoc(e *inspector.Explanation, pausedWorkflow string) whyJSON {
	out := whyJSON{ID: e.ID, State: orNull(string(e.State)), Now: jsonTime(e.Now.UTC()), Reasons: []reasonJSON{}}
	for _, r := range e.Reasons {
		out.Reasons = append(out.Reasons, reasonJSON{Reason: r, Sentence: r.Sentence(e.Now), Remedy: remedy(e.ID, pausedWorkflow, e.State, r),
			At: jsonUTC(r.At), Since: jsonUTC(r.Since), LeaseUntil: jsonUTC(r.LeaseUntil), LastSeen: jsonUTC(r.LastSeen)})
	}
	return out
}

// workflowWhyJSON is why's -json document for a workflow id.
type workflowWhyJSON struct {
	Workflow string               `json:"workflow"`
	Run      string               `json:"run"`
	Status   string               `json:"status"`
	Now      *string              `json:"now"`
	Reasons  []workflowReasonJSON `json:"reasons"`
}

// workflowReasonJSON is one reason of a workflow: its name, sentence and numbers, and
// for a task reason the task job's own why document.
type workflowReasonJSON struct {
	Reason      string   `json:"reason"`
	Sentence    string   `json:"sentence"`
	Status      string   `json:"status,omitempty"`
	Timer       string   `json:"timer,omitempty"`
	Signal      string   `json:"signal,omitempty"`
	Child       string   `json:"child,omitempty"`
	ChildRun    string   `json:"child_run,omitempty"`
	ChildStatus string   `json:"child_status,omitempty"`
	Task        string   `json:"task,omitempty"`
	Version     string   `json:"version,omitempty"`
	Step        string   `json:"step,omitempty"`
	Attempt     int      `json:"attempt,omitempty"`
	Message     string   `json:"message,omitempty"`
	At          *string  `json:"at,omitempty"`
	Since       *string  `json:"since,omitempty"`
	TaskWhy     *whyJSON `json:"task_why,omitempty"`
}

func workflowWhyDoc(e *inspector.WorkflowExplanation) workflowWhyJSON {
	out := workflowWhyJSON{Workflow: e.ID, Run: e.RunID, Status: string(e.Status), Now: jsonUTC(e.Now), Reasons: []workflowReasonJSON{}}
	for _, r := range e.Reasons {
		j := workflowReasonJSON{Reason: string(r.Reason), Sentence: r.Sentence(e.Now), Status: string(r.Status),
			Timer: r.Timer, Signal: r.Signal, Child: r.Child, ChildRun: r.ChildRun, ChildStatus: string(r.ChildStatus),
			Task: r.Task, Version: r.Version, Step: r.Step, Attempt: r.Attempt, Message: r.Message, At: jsonUTC(r.At), Since: jsonUTC(r.Since)}
		if r.TaskWhy != nil {
			paused := "" // the paused run's staged task waits for the resume
			if e.Status == headgate.WorkflowPaused {
				paused = e.ID
			}
			doc := whyDoc(r.TaskWhy, paused)
			j.TaskWhy = &doc
		}
		out.Reasons = append(out.Reasons, j)
	}
	return out
}

// jsonUTC is jsonTime in UTC.
func jsonUTC(t time.Time) *string { return jsonTime(t.UTC()) }

// workerJSON is one worker in workers' -json document.
type workerJSON struct {
	ID          string   `json:"id"`
	Host        string   `json:"host"`
	PID         int      `json:"pid"`
	Queues      []string `json:"queues"`
	Kinds       []string `json:"kinds"`
	Concurrency int      `json:"concurrency"`
	InFlight    int      `json:"in_flight"`
	Started     *string  `json:"started"`
	LastSeen    *string  `json:"last_seen"`
	LiveUntil   *string  `json:"live_until"`
	Status      string   `json:"status"` // live, stopped or dead
}

func workerStatus(w inspector.WorkerStatus) string {
	switch {
	case w.Live:
		return "live"
	case w.Stopped:
		return "stopped"
	}
	return "dead"
}

func cmdWorkers(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 0); err != nil {
		return err
	}
	ws, err := c.insp.Workers(ctx)
	if err != nil {
		return err
	}
	if c.why.json {
		out := struct {
			Workers []workerJSON `json:"workers"`
		}{Workers: []workerJSON{}}
		for _, w := range ws {
			out.Workers = append(out.Workers, workerJSON{ID: w.ID, Host: w.Host, PID: w.PID, Queues: w.Queues,
				Kinds: w.Kinds, Concurrency: w.Concurrency, InFlight: w.InFlight, Started: jsonUTC(w.Started),
				LastSeen: jsonUTC(w.LastSeen), LiveUntil: jsonUTC(w.LiveUntil), Status: workerStatus(w)})
		}
		return c.printJSON(out)
	}
	if len(ws) == 0 {
		fmt.Fprintf(c.stdout, "namespace %s lists no workers\n", c.namespace)
		return nil
	}
	tw := c.table()
	fmt.Fprintln(tw, "ID\tSTATUS\tHOST\tPID\tQUEUES\tKINDS\tIN FLIGHT\tSTARTED\tLAST SEEN")
	for _, w := range ws {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%d/%d\t%s\t%s\n", w.ID, workerStatus(w), dash(w.Host), w.PID,
			dash(strings.Join(w.Queues, ",")), dash(strings.Join(w.Kinds, ",")), w.InFlight, w.Concurrency,
			shortTime(w.Started), shortTime(w.LastSeen))
	}
	return tw.Flush()
}

// unservedLine names the queues that have work and no live worker, for stats; "" when
// there are none.
// unrunnableLine is the line under stats that names the queues holding available jobs
// heavier than their rate class's burst (QueueStats.Unrunnable): counted available, they
// never run at the class's limit, which the table alone does not show.
func unrunnableLine(stats []inspector.QueueStats) string {
	var n int64
	var queues []string
	for _, s := range stats {
		if s.Unrunnable > 0 {
			n += s.Unrunnable
			queues = append(queues, s.Queue)
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d available job(s) are heavier than their rate class's burst and cannot run at its limit: %s "+
		"(headgate why ID names the class; headgate rate CLASS LIMIT WINDOW BURST raises it)\n", n, strings.Join(queues, ", "))
}

func unservedLine(stats []inspector.QueueStats) string {
	var queues []string
	for _, s := range stats {
		if s.Unserved {
			queues = append(queues, s.Queue)
		}
	}
	if len(queues) == 0 {
		return ""
	}
	return fmt.Sprintf("no live worker serves %d queue(s) with work: %s (see headgate workers)\n",
		len(queues), strings.Join(queues, ", "))
}
