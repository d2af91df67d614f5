package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/humandur"
)

// cronOpts are the flags of the cron command.
type cronOpts struct {
	json                            bool
	cron, every, start, zone        string
	kind, payload, queue, partition string
	priority, maxAttempts           int
	unique, tags                    string
	uniqueWindow, retention         time.Duration
	misfire                         string
	grace, catchUpWindow            time.Duration
	catchUpMax                      int
	fs                              *flag.FlagSet // to tell the flags given from the defaults
}

// cronFlagSets holds each invocation's cron flags.
var cronFlagSets sync.Map // *cli -> *cronOpts

func cronFlags(fs *flag.FlagSet, c *cli) {
	o := &cronOpts{fs: fs}
	cronFlagSets.Store(c, o)
	fs.BoolVar(&o.json, "json", false, "print one JSON document on stdout")
	fs.StringVar(&o.cron, "cron", "", "add, update: 5-field cron `EXPR` or descriptor (@hourly, @daily...)")
	fs.StringVar(&o.every, "every", "", "add, update: a fixed interval `D` (90s, 1h) instead of -cron")
	fs.StringVar(&o.start, "start", "", "add, update: RFC 3339 `TIME` anchoring -every ticks, the first one interval after it (default: the add)")
	fs.StringVar(&o.zone, "zone", "", "add, update: IANA `ZONE` -cron is read in (default UTC)")
	fs.StringVar(&o.kind, "kind", "", "add, update: the job's `KIND` (required)")
	fs.StringVar(&o.payload, "payload", "", "add, update: the job's payload (`JSON`, stored as msgpack, as workers decode it)")
	fs.StringVar(&o.queue, "queue", "", "add, update: the job's `QUEUE` (default: default)")
	fs.StringVar(&o.partition, "partition", "", "add, update: the job's partition `P`")
	fs.IntVar(&o.priority, "priority", 0, "add, update: the job's priority `N`")
	fs.IntVar(&o.maxAttempts, "max-attempts", 0, "add, update: the job's maximum of attempts `N`")
	fs.StringVar(&o.unique, "unique", "", "add, update: the job's unique `KEY`: a tick is refused while it is held")
	durationFlag(fs, &o.uniqueWindow, "unique-window", 0, "add, update: hold -unique for this throttle window `D` instead of until the job ends")
	fs.StringVar(&o.tags, "tags", "", "add, update: the job's tags, comma-separated")
	durationFlag(fs, &o.retention, "retention", 0, "add, update: keep the completed job for `D` (default: deleted at success)")
	fs.StringVar(&o.misfire, "misfire", "", "add, update: skip, fire_once (default) or catch_up")
	durationFlag(fs, &o.grace, "grace", 0, "add, update: how late `D` a tick still fires as on time (default 1m)")
	fs.IntVar(&o.catchUpMax, "catch-up-max", 0, "add, update: catch_up: the most missed ticks fired")
	durationFlag(fs, &o.catchUpWindow, "catch-up-window", 0, "add, update: catch_up: how far back `D` missed ticks are fired")
}

func cmdCron(ctx context.Context, c *cli, args []string) error {
	v, _ := cronFlagSets.LoadAndDelete(c)
	o, _ := v.(*cronOpts)
	if o == nil {
		o = &cronOpts{}
	}
	if len(args) == 0 {
		return usagef("name a verb: list, add, update, pause, resume, remove, run-now")
	}
	verb, rest := args[0], args[1:]
	if verb == "list" {
		if len(rest) != 0 {
			return usagef("list takes no arguments")
		}
		return cronList(ctx, c, o)
	}
	if len(rest) != 1 {
		return usagef("%s takes one schedule name", verb)
	}
	name := rest[0]
	switch verb {
	case "add", "update":
		base := inspector.Schedule{Name: name}
		if verb == "update" {
			// An update changes the fields its flags name; the rest stays as stored.
			st, err := c.insp.Schedule(ctx, name)
			if err != nil {
				return err
			}
			base = st.Schedule
		}
		sc, err := o.schedule(base)
		if err != nil {
			return err
		}
		put := c.insp.AddSchedule
		if verb == "update" {
			put = c.insp.UpdateSchedule
		}
		if err := put(ctx, sc); err != nil {
			return byFlag(err, scheduleFlagNames)
		}
		st, err := c.insp.Schedule(ctx, name)
		if err != nil {
			return err
		}
		if o.json {
			return c.printJSON(scheduleJSONOf(st))
		}
		fmt.Fprintf(c.stdout, "%s schedule %s (revision %d), next due %s\n", map[string]string{"add": "added", "update": "updated"}[verb],
			name, st.Revision, shortTime(st.NextTick))
		return nil
	case "pause", "resume":
		f := c.insp.PauseSchedule
		if verb == "resume" {
			f = c.insp.ResumeSchedule
		}
		changed, err := f(ctx, name)
		if err != nil {
			return err
		}
		if o.json {
			return c.printJSON(struct {
				Name    string `json:"name"`
				Changed bool   `json:"changed"`
			}{name, changed})
		}
		state := map[string]string{"pause": "paused", "resume": "active"}[verb]
		if changed {
			fmt.Fprintf(c.stdout, "schedule %s is %s\n", name, state)
		} else {
			fmt.Fprintf(c.stdout, "schedule %s was %s already\n", name, state)
		}
		return nil
	case "remove":
		if err := c.insp.RemoveSchedule(ctx, name); err != nil {
			return err
		}
		if o.json {
			return c.printJSON(struct {
				Name    string `json:"name"`
				Removed bool   `json:"removed"`
			}{name, true})
		}
		fmt.Fprintf(c.stdout, "removed schedule %s\n", name)
		return nil
	case "run-now":
		r, err := c.insp.RunScheduleNow(ctx, name)
		if err != nil {
			return err
		}
		if o.json {
			return c.printJSON(struct {
				Name     string `json:"name"`
				JobID    string `json:"job_id"`
				Replayed bool   `json:"replayed"`
			}{name, r.ID, r.Replayed})
		}
		fmt.Fprintf(c.stdout, "enqueued job %s\n", r.ID)
		return nil
	}
	return usagef("unknown verb %q: list, add, update, pause, resume, remove, run-now", verb)
}

// scheduleFlagNames name the flags of add and update (and the schedule's name) by the
// field of the store's *InvalidError that a bad value of theirs gets: "invalid Job.Kind"
// names a field of the library, not what was typed.
var scheduleFlagNames = map[string]string{"Name": "the schedule name", "Cron": "-cron", "Interval": "-every",
	"Start": "-start", "Zone": "-zone", "Job.Kind": "-kind", "Job.Payload": "-payload", "Job.Queue": "-queue",
	"Job.PartitionKey": "-partition", "Job.MaxAttempts": "-max-attempts", "Job.UniqueKey": "-unique",
	"Job.UniqueWindow": "-unique-window", "Job.Retention": "-retention", "Job.Tags": "-tags: a tag",
	"Misfire.Policy": "-misfire", "Misfire.Grace": "-grace", "Misfire.Max": "-catch-up-max",
	"Misfire.Window": "-catch-up-window"}

// schedule is base with the fields the add and update flags given set: all of an add's
// definition, what an update changes.
func (o *cronOpts) schedule(base inspector.Schedule) (inspector.Schedule, error) {
	set := map[string]bool{}
	if o.fs != nil {
		o.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	}
	sc := base
	if set["cron"] && set["every"] {
		return sc, usagef("give -cron or -every, not both")
	}
	if set["priority"] && o.priority != int(int32(o.priority)) {
		return sc, usagef("-priority %d is out of range", o.priority)
	}
	if set["cron"] {
		sc.Cron, sc.Interval, sc.Start = o.cron, 0, time.Time{}
	}
	if set["every"] {
		d, err := time.ParseDuration(o.every)
		if err != nil {
			return sc, usagef("-every %q is not a duration", short(o.every))
		}
		if d <= 0 { // the store would read it as no interval: "Cron is empty and so is Interval"
			return sc, usagef("-every %q is not a positive interval", short(o.every))
		}
		sc.Cron, sc.Interval = "", d
	}
	if set["start"] {
		t, err := time.Parse(time.RFC3339, o.start)
		if err != nil {
			return sc, usagef("-start %q is not an RFC 3339 time", short(o.start))
		}
		sc.Start = t
	}
	if set["payload"] {
		sc.Job.Payload = nil
		if o.payload != "" {
			b, err := payloadFromJSON(o.payload, base.Job.Payload)
			if err != nil {
				return sc, err
			}
			sc.Job.Payload = b
		}
	}
	if set["tags"] {
		sc.Job.Tags = nil
		if o.tags != "" {
			sc.Job.Tags = strings.Split(o.tags, ",")
		}
	}
	j, m := &sc.Job, &sc.Misfire
	for name, apply := range map[string]func(){
		"zone": func() { sc.Zone = o.zone }, "kind": func() { j.Kind = o.kind }, "queue": func() { j.Queue = o.queue },
		"partition": func() { j.PartitionKey = o.partition }, "priority": func() { j.Priority = int32(o.priority) },
		"max-attempts": func() { j.MaxAttempts = o.maxAttempts }, "unique": func() { j.UniqueKey = o.unique },
		"unique-window": func() { j.UniqueWindow = o.uniqueWindow }, "retention": func() { j.Retention = o.retention },
		"misfire": func() { m.Policy = headgate.MisfirePolicy(o.misfire) }, "grace": func() { m.Grace = o.grace },
		"catch-up-max": func() { m.Max = o.catchUpMax }, "catch-up-window": func() { m.Window = o.catchUpWindow },
	} {
		if set[name] {
			apply()
		}
	}
	if set["misfire"] && m.Policy != headgate.MisfireCatchUp {
		// Max and Window are catch_up's: moving off it drops them unless given.
		if !set["catch-up-max"] {
			m.Max = 0
		}
		if !set["catch-up-window"] {
			m.Window = 0
		}
	}
	return sc, nil
}

// scheduleJSON is one schedule in -json output. Every field is present in every
// document, null when it has no value (cron of an interval schedule, interval_ms and
// start of a cron one, catch_up's max and window under another policy), as in the
// other commands' documents, so a script reads the same fields from every schedule.
type scheduleJSON struct {
	Name     string  `json:"name"`
	Cron     *string `json:"cron"`
	Interval *int64  `json:"interval_ms"`
	Start    *string `json:"start"`
	Zone     string  `json:"zone"`
	Paused   bool    `json:"paused"`
	Misfire  struct {
		Policy string `json:"policy"`
		Grace  int64  `json:"grace_ms"`
		Max    *int   `json:"max"`
		Window *int64 `json:"window_ms"`
	} `json:"misfire"`
	Job struct {
		Kind        string   `json:"kind"`
		Queue       string   `json:"queue"`
		Partition   string   `json:"partition"`
		Priority    int32    `json:"priority"`
		MaxAttempts int      `json:"max_attempts"`
		UniqueKey   string   `json:"unique_key"`
		Tags        []string `json:"tags"`
		Payload     []byte   `json:"payload"` // base64, as in a job's document
	} `json:"job"`
	Revision    int64   `json:"revision"`
	Mark        *string `json:"mark"`
	NextDue     *string `json:"next_due"`
	NextTick    *string `json:"next_tick"`
	Fired       int64   `json:"fired"`
	Skipped     int64   `json:"skipped"`
	Refused     int64   `json:"refused"`
	Runs        int64   `json:"runs"`
	LastTick    *string `json:"last_tick"`
	LastJobID   string  `json:"last_job_id"`
	LastSkipped *string `json:"last_skipped_tick"`
	LastRefused *string `json:"last_refused_tick"`
	LastRefusal string  `json:"last_refusal"`
}

func scheduleJSONOf(st *inspector.ScheduleState) scheduleJSON {
	j := scheduleJSON{Name: st.Name, Start: jsonTime(st.Start), Zone: st.Zone, Paused: st.Paused,
		Revision: st.Revision, Mark: jsonTime(st.Mark), NextDue: jsonTime(st.NextDue), NextTick: jsonTime(st.NextTick), Fired: st.Fired,
		Skipped: st.Skipped, Refused: st.Refused, Runs: st.Runs, LastTick: jsonTime(st.LastTick), LastJobID: st.LastJobID,
		LastSkipped: jsonTime(st.LastSkippedTick), LastRefused: jsonTime(st.LastRefusedTick), LastRefusal: st.LastRefusal}
	// Durations are whole milliseconds under their name with _ms, as in policy -json.
	if st.Cron != "" {
		j.Cron = &st.Cron
	}
	if st.Interval != 0 {
		ms := st.Interval.Milliseconds()
		j.Interval = &ms
	}
	j.Misfire.Policy, j.Misfire.Grace = string(st.Misfire.Policy), st.Misfire.Grace.Milliseconds()
	if st.Misfire.Max != 0 {
		j.Misfire.Max = &st.Misfire.Max
	}
	if st.Misfire.Window != 0 {
		ms := st.Misfire.Window.Milliseconds()
		j.Misfire.Window = &ms
	}
	e := st.Job
	j.Job.Kind, j.Job.Queue, j.Job.Partition, j.Job.Priority = e.Kind, e.Queue, e.PartitionKey, e.Priority
	j.Job.MaxAttempts, j.Job.UniqueKey, j.Job.Tags, j.Job.Payload = e.MaxAttempts, e.UniqueKey, e.Tags, e.Payload
	if j.Job.Tags == nil {
		j.Job.Tags = []string{}
	}
	return j
}

func cronList(ctx context.Context, c *cli, o *cronOpts) error {
	var all []*inspector.ScheduleState
	for cursor := ""; ; {
		page, next, err := c.insp.Schedules(ctx, cursor, 500)
		if err != nil {
			return err
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if o.json {
		out := struct {
			Schedules []scheduleJSON `json:"schedules"`
		}{Schedules: []scheduleJSON{}}
		for _, st := range all {
			out.Schedules = append(out.Schedules, scheduleJSONOf(st))
		}
		return c.printJSON(out)
	}
	if len(all) == 0 { // as the other listings say it, rather than a header over nothing
		fmt.Fprintf(c.stdout, "namespace %s has no schedules\n", c.namespace)
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWHEN\tZONE\tMISFIRE\tSTATE\tNEXT DUE\tLAST TICK\tFIRED\tSKIPPED\tREFUSED\tLAST REFUSAL")
	for _, st := range all {
		when := st.Cron
		if st.Interval != 0 {
			when = "every " + humandur.String(st.Interval)
		}
		state := "active"
		if st.Paused {
			state = "paused"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", st.Name, when, st.Zone, st.Misfire.Policy, state,
			shortTime(st.NextTick), shortTime(st.LastTick), strconv.FormatInt(st.Fired, 10),
			strconv.FormatInt(st.Skipped, 10), strconv.FormatInt(st.Refused, 10), st.LastRefusal)
	}
	return tw.Flush()
}

// formatTime is a time for the tables: RFC 3339 in UTC, or "-".
