package headgate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a periodic job: a cron expression or a fixed interval, the job each tick
// enqueues, and what to do with ticks that passed while no worker could fire them. It
// lives in the namespace (AddSchedule), so every worker of the fleet can fire it and
// none needs it in its own configuration.
type Schedule struct {
	// Name identifies the schedule in the namespace; its jobs have the ids
	// "cron:<Name>:<tick>". Required; no braces or control characters.
	Name string
	// Cron is a standard 5-field expression ("*/5 * * * *": minute, hour, day of month,
	// month, day of week) or a descriptor (@yearly, @monthly, @weekly, @daily,
	// @midnight, @hourly), read in Zone, that some date matches (not "0 0 30 2 *").
	// Exactly one of Cron and Interval is set.
	Cron string
	// Interval ticks at Start + k*Interval, k >= 1, whatever the zone says. At least 1s,
	// whole milliseconds.
	Interval time.Duration
	// Start anchors Interval ticks; the zero time means the store time of AddSchedule.
	// Only with Interval.
	Start time.Time
	// Zone is the IANA time zone in which Cron is read ("Europe/Berlin"). Defaults to
	// "UTC". See the README for what happens when clocks change.
	Zone string
	// Job is the template of each tick's job: Kind is required; ID, ScheduledAt,
	// ScheduledIn and Pending must be empty (the tick sets them), and uniqueness may be
	// strict or a throttle window but neither replace nor debounce.
	Job Envelope
	// Misfire says what happens to ticks that could not fire on time.
	Misfire Misfire
}

// MisfirePolicy names what a schedule does with ticks that were missed: due more than
// Misfire.Grace ago when a worker could fire them (every worker was down, the cron duty
// was between holders for long). Ticks before the schedule was added, or before its
// last resume, are none of them: they never fire.
type MisfirePolicy string

const (
	// MisfireSkip fires no missed tick: the schedule resumes at its next tick on time.
	MisfireSkip MisfirePolicy = "skip"
	// MisfireFireOnce fires the latest missed tick once, late, unless a tick on time
	// fires in the same pass; the others are skipped.
	MisfireFireOnce MisfirePolicy = "fire_once"
	// MisfireCatchUp fires the missed ticks of the last Misfire.Window, at most
	// Misfire.Max of them (the latest), oldest first; older ones are skipped.
	MisfireCatchUp MisfirePolicy = "catch_up"
)

// Defaults and limits of Misfire.
const (
	// MisfireGraceDefault is how late a tick may fire and still count as on time.
	MisfireGraceDefault = time.Minute
	// MaxCatchUp is the most missed ticks one catch-up fires.
	MaxCatchUp = 1000
	// maxScheduleLookback bounds how far back a misfire window reaches, so that
	// computing a pass's ticks stays bounded.
	maxScheduleLookback = 366 * 24 * time.Hour
)

// Misfire is a schedule's misfire policy.
type Misfire struct {
	// Policy defaults to MisfireFireOnce.
	Policy MisfirePolicy
	// Grace is how late a tick may be and still fire as on time, under every policy.
	// Defaults to MisfireGraceDefault (1m).
	Grace time.Duration
	// Max is, for MisfireCatchUp, the most missed ticks fired (1..MaxCatchUp).
	Max int
	// Window is, for MisfireCatchUp, how far back before the store's now missed ticks
	// are caught up: more than Grace (a tick is missed only once it is more than Grace
	// late), at most a year.
	Window time.Duration
}

// ErrScheduleNotFound is returned for a schedule name the namespace does not have.
var ErrScheduleNotFound = errors.New("headgate: schedule not found")

// ScheduleExistsError: AddSchedule of a name the namespace already has. Nothing was
// written; use UpdateSchedule to change it.
type ScheduleExistsError struct{ Name string }

func (e *ScheduleExistsError) Error() string {
	return fmt.Sprintf("headgate: schedule %q exists; update it instead", e.Name)
}

// cronParser reads the 5-field standard format and the descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// normalizeSchedule validates a schedule and returns it with defaults applied and its
// expression and zone parsed.
func normalizeSchedule(sc Schedule) (Schedule, *ticker, error) {
	if err := validateRequired("Name", sc.Name, true); err != nil {
		return sc, nil, err
	}
	sc.Zone = strings.TrimSpace(sc.Zone)
	if sc.Zone == "" {
		sc.Zone = "UTC"
	}
	loc, err := time.LoadLocation(sc.Zone)
	if err != nil || sc.Zone == "Local" {
		return sc, nil, invalid("Zone", "%q is not an IANA time zone", sc.Zone)
	}
	t := &ticker{loc: loc}
	switch {
	case sc.Cron != "" && sc.Interval != 0:
		return sc, nil, invalid("Cron", "cannot be set together with Interval")
	case sc.Cron != "":
		expr := strings.TrimSpace(sc.Cron)
		if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
			return sc, nil, invalid("Cron", "%q names a zone: set Zone instead", sc.Cron)
		}
		if strings.HasPrefix(expr, "@every") {
			return sc, nil, invalid("Cron", "%q: use Interval for a fixed interval", sc.Cron)
		}
		parsed, err := cronParser.Parse(expr)
		if err != nil {
			return sc, nil, invalid("Cron", "%q: %v", sc.Cron, err)
		}
		spec, ok := parsed.(*cron.SpecSchedule)
		if !ok {
			return sc, nil, invalid("Cron", "%q is not a calendar expression", sc.Cron)
		}
		spec.Location = loc
		t.spec = spec
		if !sc.Start.IsZero() {
			return sc, nil, invalid("Start", "applies to Interval only")
		}
	case sc.Interval != 0:
		if sc.Interval < time.Second || sc.Interval%time.Millisecond != 0 {
			return sc, nil, invalid("Interval", "is %s: it must be at least 1s, in whole milliseconds", sc.Interval)
		}
		if !sc.Start.IsZero() && (sc.Start.UnixMilli() < 0 || sc.Start.After(time.UnixMilli(maxScheduledMs))) {
			return sc, nil, invalid("Start", "is %s, outside the store clock's range", sc.Start.UTC().Format(time.RFC3339))
		}
		t.every = sc.Interval
	default:
		return sc, nil, invalid("Cron", "is empty and so is Interval: set one")
	}

	j := sc.Job
	switch {
	case j.ID != "":
		return sc, nil, invalid("Job.ID", "must be empty: each tick's job is cron:%s:<tick>", sc.Name)
	case !j.ScheduledAt.IsZero() || j.ScheduledIn != 0:
		return sc, nil, invalid("Job.ScheduledAt", "must be empty: the tick sets it")
	case j.Pending:
		return sc, nil, invalid("Job.Pending", "cannot be set on a schedule's job")
	case j.UniqueReplace != 0 || j.UniqueDebounce != 0:
		return sc, nil, invalid("Job.UniqueReplace", "replace and debounce do not apply to a schedule's job: a tick that finds its key held is refused and recorded")
	}
	j.ID = "cron:" + sc.Name + ":tick"
	j, err = normalize("Job", j)
	if err != nil {
		return sc, nil, err
	}
	j.ID = ""
	sc.Job = j

	m := &sc.Misfire
	if m.Policy == "" {
		m.Policy = MisfireFireOnce
	}
	if m.Grace == 0 {
		m.Grace = MisfireGraceDefault
	}
	if m.Grace < 0 || m.Grace > maxScheduleLookback {
		return sc, nil, invalid("Misfire.Grace", "is %s, outside 0..%s", m.Grace, maxScheduleLookback)
	}
	switch m.Policy {
	case MisfireSkip, MisfireFireOnce:
		if m.Max != 0 || m.Window != 0 {
			return sc, nil, invalid("Misfire.Max", "and Window apply to %s only", MisfireCatchUp)
		}
	case MisfireCatchUp:
		if m.Max < 1 || m.Max > MaxCatchUp {
			return sc, nil, invalid("Misfire.Max", "is %d, outside 1..%d", m.Max, MaxCatchUp)
		}
		if m.Window <= 0 || m.Window > maxScheduleLookback {
			return sc, nil, invalid("Misfire.Window", "is %s, outside (0, %s]", m.Window, maxScheduleLookback)
		}
	default:
		return sc, nil, invalid("Misfire.Policy", "%q is none of %s, %s, %s", m.Policy, MisfireSkip, MisfireFireOnce, MisfireCatchUp)
	}
	return sc, t, nil
}

// ScheduleState is a schedule as the namespace keeps it: its definition and what its
// firing has done so far.
type ScheduleState struct {
	Schedule
	Paused  bool
	Created time.Time
	Updated time.Time
	// Revision counts the changes of the definition and of its pause; a fire computed
	// from an older revision is refused.
	Revision int64
	// Mark is the last tick the schedule has dealt with (fired, skipped or refused), or
	// the time of its add or resume; only ticks after it fire.
	Mark time.Time
	// NextDue is when a worker looks at the schedule next; zero while paused or when no
	// tick is left.
	NextDue time.Time
	// NextTick is the schedule's next tick: the first after Mark; zero while paused or
	// when no tick is left. It differs from NextDue until a worker first looks at a
	// schedule that was added, updated or resumed (NextDue is then that moment). A
	// NextTick before the store's now is overdue: the cron duty's next pass deals with it
	// under the misfire policy.
	NextTick time.Time
	// Fired counts the jobs the ticks enqueued; Skipped the ticks the misfire policy
	// skipped; Refused the ticks whose job the namespace refused (Backpressure,
	// Quarantined, a held unique key, an id taken by another job), and Runs the RunNow
	// calls.
	Fired, Skipped, Refused, Runs int64
	LastTick                      time.Time // the last tick that enqueued a job
	LastJobID                     string
	LastSkippedTick               time.Time
	LastRefusedTick               time.Time
	LastRefusal                   string // why the last refused tick was refused
}

// scheduleDef is the stored form of a definition (hash field "def").
type scheduleDef struct {
	Cron     string   `json:"cron,omitempty"`
	Interval int64    `json:"interval_ms,omitempty"`
	Start    int64    `json:"start_ms,omitempty"`
	Zone     string   `json:"zone"`
	Job      Envelope `json:"job"`
	Misfire  struct {
		Policy MisfirePolicy `json:"policy"`
		Grace  int64         `json:"grace_ms"`
		Max    int           `json:"max,omitempty"`
		Window int64         `json:"window_ms,omitempty"`
	} `json:"misfire"`
}

func encodeScheduleDef(sc Schedule) (string, error) {
	d := scheduleDef{Cron: sc.Cron, Interval: ms(sc.Interval), Start: unixMs(sc.Start), Zone: sc.Zone, Job: sc.Job}
	d.Misfire.Policy, d.Misfire.Grace = sc.Misfire.Policy, ms(sc.Misfire.Grace)
	d.Misfire.Max, d.Misfire.Window = sc.Misfire.Max, ms(sc.Misfire.Window)
	b, err := json.Marshal(d)
	return string(b), err
}

func decodeScheduleDef(name, text string) (Schedule, error) {
	var d scheduleDef
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		return Schedule{}, &CorruptError{Key: "schedule " + name, Reason: "definition does not decode: " + err.Error()}
	}
	sc := Schedule{Name: name, Cron: d.Cron, Interval: durationMs(d.Interval), Start: fromMs(d.Start), Zone: d.Zone, Job: d.Job}
	sc.Misfire = Misfire{Policy: d.Misfire.Policy, Grace: durationMs(d.Misfire.Grace), Max: d.Misfire.Max, Window: durationMs(d.Misfire.Window)}
	return sc, nil
}

// ScheduleJobID is the id of the job a schedule's tick enqueues: the same for every
// firer of the tick, so a second fire of it is a replay.
func ScheduleJobID(name string, tick time.Time) string {
	return "cron:" + name + ":" + tick.UTC().Format("2006-01-02T15:04:05.000Z")
}
