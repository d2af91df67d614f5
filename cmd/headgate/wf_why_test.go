package main

import (
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate/workflow"
	"github.com/headgate/headgate/workflowtest"
)

type workflowWhyOut struct {
	Workflow string  `json:"workflow"`
	Run      string  `json:"run"`
	Status   string  `json:"status"`
	Now      *string `json:"now"`
	Reasons  []struct {
		Reason   string  `json:"reason"`
		Sentence string  `json:"sentence"`
		Timer    string  `json:"timer"`
		Task     string  `json:"task"`
		Version  string  `json:"version"`
		At       *string `json:"at"`
		Since    *string `json:"since"`
		TaskWhy  *whyOut `json:"task_why"`
	} `json:"reasons"`
}

// TestWhyCommandWorkflow: why falls back to the workflow of the id when no job has it.
func TestWhyCommandWorkflow(t *testing.T) {
	t.Parallel()
	b := setupWf(t)
	b.env.Start("shipment", "o1", "ship-1")
	var out workflowWhyOut
	b.runJSON(t, exitOK, &out, "why", "ship-1")
	if out.Workflow != "ship-1" || out.Status != "running" || len(out.Reasons) != 1 {
		t.Fatalf("why ship-1 -json before its first task: %+v", out)
	}
	r := out.Reasons[0]
	if r.Reason != "task_not_running" || r.Task == "" || r.TaskWhy == nil || r.TaskWhy.ID != r.Task ||
		r.TaskWhy.State == "running" || len(r.TaskWhy.Reasons) == 0 {
		t.Fatalf("why ship-1 -json, its task: %+v", r)
	}
	text := b.mustRun(t, "why", "ship-1")
	if !strings.HasPrefix(text, "workflow ship-1 (run ") || !strings.Contains(text, "its task job "+r.Task+" is not running") ||
		!strings.Contains(text, "\n      - ") {
		t.Fatalf("why ship-1 before its first task:\n%s", text)
	}

	b.env.Run()
	at := func(d time.Duration) string { return *jsonTime(workflowtest.Epoch.Add(d)) }
	out = workflowWhyOut{}
	b.runJSON(t, exitOK, &out, "why", "ship-1")
	if len(out.Reasons) != 1 || out.Now == nil || *out.Now != at(250*time.Millisecond) {
		t.Fatalf("why ship-1 -json while it sleeps: %+v", out)
	}
	r = out.Reasons[0]
	// The charge step took 250ms of store time; the hour's sleep was armed after it.
	if r.Reason != "sleeping" || r.Timer != "sleep/cool#1" || r.At == nil || *r.At != at(time.Hour+250*time.Millisecond) ||
		r.Since == nil || *r.Since != at(250*time.Millisecond) || r.TaskWhy != nil ||
		r.Sentence != "it sleeps: timer sleep/cool#1 fires at 2030-01-01T01:00:00.250Z (in 1h)" {
		t.Fatalf("why ship-1 -json while it sleeps: %+v", r)
	}

	code, _, errOut := b.run(t, "why", "nope")
	if code != exitError || !strings.Contains(errOut, "job not found") || !strings.Contains(errOut, "no workflow has that id") {
		t.Errorf("why nope: exit %d, stderr %q", code, errOut)
	}
}

// TestWhyCommandWorkflowVersion: a run whose version no live worker serves says so.
func TestWhyCommandWorkflowVersion(t *testing.T) {
	t.Parallel()
	b := setupWf(t)
	if _, err := b.env.Client.Start(b.ctx, "shipment", "o1", workflow.StartOptions{ID: "ship-9", Version: "v9"}); err != nil {
		t.Fatal(err)
	}
	text := b.mustRun(t, "why", "ship-9")
	if !strings.Contains(text, "is not running (available): no worker serves version v9\n") ||
		!strings.Contains(text, "no live worker serves its queue default@v9") {
		t.Fatalf("why ship-9:\n%s", text)
	}
	var out workflowWhyOut
	b.runJSON(t, exitOK, &out, "why", "ship-9")
	if len(out.Reasons) != 1 || out.Reasons[0].Version != "v9" {
		t.Fatalf("why ship-9 -json: %+v", out)
	}
}

// TestWhyCommandPausedWorkflowTask: the staged task of a paused workflow names the
// workflow's resume as its remedy, not a release of the task, from the task's id and
// from the workflow's.
func TestWhyCommandPausedWorkflowTask(t *testing.T) {
	t.Parallel()
	b := setupWf(t)
	b.env.Start("shipment", "o1", "ship-3")
	b.mustRun(t, "wf", "pause", "ship-3")
	var out workflowWhyOut
	b.runJSON(t, exitOK, &out, "why", "ship-3")
	var task *whyOut
	for _, r := range out.Reasons {
		if r.TaskWhy != nil {
			task = r.TaskWhy
		}
	}
	if task == nil || task.State != "pending" || len(task.Reasons) == 0 || task.Reasons[0].Reason != "staged" ||
		task.Reasons[0].Remedy != "headgate wf resume ship-3   (its workflow is paused)" {
		t.Fatalf("why ship-3 -json while paused: %+v", task)
	}
	text := b.mustRun(t, "why", task.ID)
	if !strings.Contains(text, "to act:\n  headgate wf resume ship-3   (its workflow is paused)\n") ||
		strings.Contains(text, "headgate release") {
		t.Fatalf("why %s:\n%s", task.ID, text)
	}
}
