package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/headgate/headgate"
)

// wfDeploymentJSON is a worker deployment in -json output.
type wfDeploymentJSON struct {
	Name             string            `json:"name"`
	Versions         []string          `json:"versions"`
	Labels           map[string]string `json:"labels"`
	Desired          string            `json:"desired"`
	CreatedAt        *string           `json:"created_at"`
	UpdatedAt        *string           `json:"updated_at"`
	DesiredChangedAt *string           `json:"desired_changed_at"`
	// OpenRuns is, per version, how many runs on it are open (listings only, where it
	// is {} for a deployment that lists no version).
	OpenRuns *map[string]int64 `json:"open_runs,omitempty"`
}

func wfDeploymentOf(d *headgate.WorkerDeployment) wfDeploymentJSON {
	j := wfDeploymentJSON{Name: d.Name, Versions: d.Versions, Labels: d.Labels, Desired: string(d.Desired),
		CreatedAt: utcTime(d.CreatedAt), UpdatedAt: utcTime(d.UpdatedAt), DesiredChangedAt: utcTime(d.DesiredChangedAt)}
	if j.Versions == nil {
		j.Versions = []string{}
	}
	if j.Labels == nil {
		j.Labels = map[string]string{}
	}
	return j
}

// cmdWfDeployments lists the worker deployments: the versions each serves with how many
// runs are open on each, and its desired state, undecodable rows apart.
func cmdWfDeployments(ctx context.Context, c *cli, args []string) error {
	loc, err := c.wfPage(args)
	if err != nil {
		return err
	}
	page, next, err := c.insp.WorkerDeployments(ctx, c.wf.after, c.wf.limit)
	if inv, ok := errors.AsType[*headgate.InvalidError](err); ok && inv.Field == "cursor" {
		return usagef("-after %s", inv.Reason) // named by the flag that carried it
	}
	if err != nil {
		return err
	}
	var versions []string
	for _, d := range page.Deployments {
		versions = append(versions, d.Versions...)
	}
	open, err := c.insp.OpenRunsByVersion(ctx, versions...)
	if err != nil {
		return err
	}
	if c.wf.json {
		type undecodableJSON struct {
			Name  string `json:"name"`
			Error string `json:"error"`
		}
		out := struct {
			Deployments []wfDeploymentJSON `json:"deployments"`
			Undecodable []undecodableJSON  `json:"undecodable"`
			Next        *string            `json:"next"`
		}{Deployments: []wfDeploymentJSON{}, Undecodable: []undecodableJSON{}}
		for _, d := range page.Deployments {
			j := wfDeploymentOf(d)
			runs := map[string]int64{}
			for _, v := range d.Versions {
				runs[v] = open[v]
			}
			j.OpenRuns = &runs
			out.Deployments = append(out.Deployments, j)
		}
		for _, u := range page.Undecodable {
			out.Undecodable = append(out.Undecodable, undecodableJSON{Name: u.Name, Error: u.Error})
		}
		if next != "" {
			out.Next = &next
		}
		return c.printJSON(out)
	}
	if len(page.Deployments) == 0 && len(page.Undecodable) == 0 && next == "" {
		fmt.Fprintln(c.stdout, "no worker deployments")
		return nil
	}
	tw := c.table()
	fmt.Fprintln(tw, "NAME\tDESIRED\tSINCE\tVERSIONS (OPEN RUNS)")
	for _, d := range page.Deployments {
		vs := make([]string, len(d.Versions))
		for i, v := range d.Versions {
			vs[i] = fmt.Sprintf("%s (%d)", v, open[v])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Name, d.Desired, zonedTime(d.DesiredChangedAt, loc), strings.Join(vs, " "))
	}
	for _, u := range page.Undecodable {
		fmt.Fprintf(tw, "%s\tundecodable\t-\t%s\n", u.Name, u.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(c.stdout, "more: %s\n", c.wfNextPage("deployments", next))
	}
	return nil
}

// cmdWfSetDeploymentState drains (drain) or reactivates (activate) a worker deployment.
func cmdWfSetDeploymentState(ctx context.Context, c *cli, verb string, args []string) error {
	if err := wantArgs(args, 1); err != nil {
		return err
	}
	desired := headgate.DesiredDraining
	if verb == "activate" {
		desired = headgate.DesiredActive
	}
	d, err := c.insp.SetDeploymentState(ctx, args[0], desired)
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("no worker deployment %q (headgate wf deployments lists them)", args[0])
	}
	if c.wf.json {
		return c.printJSON(wfDeploymentOf(d))
	}
	loc, err := c.zone()
	if err != nil {
		return err
	}
	// Since when, rather than "now": a deployment that was in the state already keeps
	// the time it entered it, and the line stays true.
	line := fmt.Sprintf("%s %s: %s since %s", verb, d.Name, d.Desired, zonedTime(d.DesiredChangedAt, loc))
	if len(d.Versions) > 0 {
		line += "; versions " + strings.Join(d.Versions, " ")
	}
	if desired == headgate.DesiredDraining {
		line += " take no new run unless another active deployment lists them; their runs finish"
	}
	fmt.Fprintln(c.stdout, line)
	return nil
}
