package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/workflow"
)

type wfDeploymentsOut struct {
	Deployments []wfDeploymentJSON `json:"deployments"`
	Undecodable []struct {
		Name  string `json:"name"`
		Error string `json:"error"`
	} `json:"undecodable"`
	Next *string `json:"next"`
}

// TestWfDeploymentsDrainActivate: the deployments listing, and drain and activate
// steering which versions new runs start on.
func TestWfDeploymentsDrainActivate(t *testing.T) {
	t.Parallel()
	b := setupWf(t)
	if out := b.mustWf(t, "deployments"); out != "no worker deployments\n" {
		t.Fatalf("deployments of an empty namespace: %q", out)
	}
	for _, d := range []headgate.WorkerDeployment{{Name: "blue", Versions: []string{"v1"}}, {Name: "green", Versions: []string{"v2", "v3"}}} {
		if _, _, err := b.env.Store.PutWorkerDeployment(b.ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.env.Store.WriteRawWorkerDeployment(b.ctx, "poison", []byte("x")); err != nil {
		t.Fatal(err)
	}
	var out wfDeploymentsOut
	b.wfJSON(t, exitOK, &out, "deployments", "-limit", "2")
	if len(out.Deployments) != 2 || out.Deployments[0].Name != "blue" || out.Deployments[0].Desired != "active" ||
		strings.Join(out.Deployments[1].Versions, " ") != "v2 v3" || len(out.Undecodable) != 0 || out.Next == nil {
		t.Fatalf("deployments -json -limit 2: %+v", out)
	}
	next := *out.Next
	out = wfDeploymentsOut{}
	b.wfJSON(t, exitOK, &out, "deployments", "-after", next)
	if len(out.Deployments) != 0 || len(out.Undecodable) != 1 || out.Undecodable[0].Name != "poison" || out.Next != nil {
		t.Fatalf("deployments -json, second page: %+v", out)
	}

	const drained = "drain blue: draining since 2030-01-01T00:00:00.000Z UTC; versions v1 take no new run unless another active deployment lists them; their runs finish\n"
	if got := b.mustWf(t, "drain", "blue", "-tz", "UTC"); got != drained {
		t.Fatalf("drain blue: %q", got)
	}
	// Drained again an hour on: nothing changes, and the line still says since when.
	b.env.Advance(time.Hour)
	if got := b.mustWf(t, "drain", "blue", "-tz", "UTC"); got != drained {
		t.Fatalf("second drain blue: %q, want %q", got, drained)
	}
	_, err := b.env.Client.Start(b.ctx, "shipment", "o1", workflow.StartOptions{ID: "s1", Version: "v1"})
	var draining *headgate.VersionDrainingError
	if !errors.As(err, &draining) {
		t.Fatalf("start on v1 after drain blue: %v, want VersionDrainingError", err)
	}
	text := b.mustWf(t, "deployments")
	if !strings.Contains(text, "blue    draining") || !strings.Contains(text, "v2 (0) v3 (0)") || !strings.Contains(text, "poison") {
		t.Fatalf("deployments after the drain:\n%s", text)
	}
	var d wfDeploymentJSON
	b.wfJSON(t, exitOK, &d, "activate", "blue")
	if d.Name != "blue" || d.Desired != "active" || len(d.Versions) != 1 {
		t.Fatalf("activate blue -json: %+v", d)
	}
	if _, err := b.env.Client.Start(b.ctx, "shipment", "o1", workflow.StartOptions{ID: "s1", Version: "v1"}); err != nil {
		t.Fatalf("start on v1 after activate blue: %v", err)
	}
	// The open runs per version: s1 on v1.
	if text := b.mustWf(t, "deployments"); !strings.Contains(text, "VERSIONS (OPEN RUNS)") || !strings.Contains(text, "v1 (1)") {
		t.Fatalf("deployments with a run open on v1:\n%s", text)
	}
	out = wfDeploymentsOut{}
	b.wfJSON(t, exitOK, &out, "deployments")
	if len(out.Deployments) != 2 || out.Deployments[0].OpenRuns == nil || (*out.Deployments[0].OpenRuns)["v1"] != 1 ||
		out.Deployments[1].OpenRuns == nil || len(*out.Deployments[1].OpenRuns) != 2 || (*out.Deployments[1].OpenRuns)["v2"] != 0 {
		t.Fatalf("deployments -json with a run open on v1: %+v", out)
	}
	if err := b.env.Client.Terminate(b.ctx, "s1", ""); err != nil {
		t.Fatal(err)
	}
	if text := b.mustWf(t, "deployments"); !strings.Contains(text, "v1 (0)") {
		t.Fatalf("deployments once s1 closed:\n%s", text)
	}

	// A deployment that lists no version yet has every field too: open_runs is {}.
	if _, _, err := b.env.Store.PutWorkerDeployment(b.ctx, headgate.WorkerDeployment{Name: "amber"}); err != nil {
		t.Fatal(err)
	}
	if text := b.mustWf(t, "deployments", "-json", "-limit", "1"); !strings.Contains(text, `"name": "amber"`) ||
		!strings.Contains(text, `"open_runs": {}`) {
		t.Errorf("deployments -json with a deployment of no version:\n%s", text)
	}
	if code, _, errOut := b.wf(t, "drain", "nope"); code != exitError || !strings.Contains(errOut, `no worker deployment "nope"`) {
		t.Errorf("drain nope: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := b.wf(t, "drain", "poison"); code != exitError || !strings.Contains(errOut, "stored undecodable") {
		t.Errorf("drain poison: exit %d, stderr %q", code, errOut)
	}
	// A cursor the listing did not print is refused, not read as the end of the listing.
	for _, after := range []string{"xyz", "no!", "ew"} {
		if code, out, errOut := b.wf(t, "deployments", "-after", after); code != exitUsage || out != "" || !strings.HasPrefix(errOut,
			`headgate wf: -after "`+after+`" is not a cursor of this listing`+"\n") {
			t.Errorf("deployments -after %s: exit %d, stdout %q, stderr %q", after, code, out, errOut)
		}
	}
	for _, args := range [][]string{{"drain"}, {"activate", "a", "b"}, {"deployments", "x"}, {"deployments", "-limit", "0"},
		{"drain", "blue", "-after", "x"}} {
		if code, _, errOut := b.wf(t, args...); code != exitUsage {
			t.Errorf("wf %v: exit %d, want %d: %s", args, code, exitUsage, errOut)
		}
	}
}
