package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Env records where the numbers came from; a table without it cannot be
// compared with another.
type Env struct {
	RedisVersion string `json:"redis_version"`
	// RedisPersistence is the server's AOF and RDB configuration (CONFIG
	// GET): what a crash of the machine can lose.
	RedisPersistence string `json:"redis_persistence"`
	// Stores are the systems' stores other than Redis, e.g. River's
	// PostgreSQL with its durability settings.
	Stores    []string `json:"stores,omitempty"`
	RedisAddr string   `json:"redis_addr"`
	GoVersion string   `json:"go_version"`
	CPUs      int      `json:"cpus"`
	Quick     bool     `json:"quick"`
	Started   string   `json:"started"`
	// One-minute load average at start and end (Linux only). Everything
	// shares the machine, so a load above the CPU count means noisy numbers.
	LoadStart string `json:"load_start,omitempty"`
	LoadEnd   string `json:"load_end,omitempty"`
	// HeadgateSource is the git state of the headgate module the bench was
	// built against (replace => ../): commit, plus a digest of uncommitted
	// changes outside bench/ when there are any.
	HeadgateSource string `json:"headgate_source,omitempty"`
}

// headgateSource describes the headgate checkout the harness was built
// against: its commit, and when files outside bench/ have uncommitted
// changes, "+dirty" and a digest of that diff, so two tables can be told to
// come from the same code. "" when git or the checkout is not there.
func headgateSource() string {
	dir := ".."
	if _, file, _, ok := runtime.Caller(0); ok {
		dir = filepath.Join(filepath.Dir(file), "..")
	}
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	head, err := git("rev-parse", "--short", "HEAD")
	if err != nil {
		return ""
	}
	diff, err := git("diff", "HEAD", "--", ".", ":(exclude)bench")
	if err != nil || diff == "" {
		return head
	}
	sum := sha256.Sum256([]byte(diff))
	return fmt.Sprintf("%s+dirty(%x)", head, sum[:4])
}

// loadAvg returns the one-minute load average, or "" where unknown.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// runResult is one system's run of one scenario, as it happened.
type runResult struct {
	Scenario string `json:"scenario"`
	Kind     Kind   `json:"kind"`
	System   string `json:"system"`
	Round    int    `json:"round,omitempty"` // -rounds: 0-based
	Result
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"` // wall time of the whole run, set-up included
}

// tableRow is one line of the table: one metric, one value per system.
// A missing value (failed or skipped run) is absent from Values.
type tableRow struct {
	Label  string             `json:"label"`
	Unit   string             `json:"unit"`
	Higher bool               `json:"higher_is_better"`
	Values map[string]float64 `json:"values"`
	Notes  map[string]string  `json:"notes,omitempty"`
}

type report struct {
	Env     Env               `json:"env"`
	Systems []string          `json:"systems"`
	Skipped map[string]string `json:"skipped,omitempty"`
	Seconds float64           `json:"seconds"`
	Rows    []tableRow        `json:"rows"`
	Runs    []runResult       `json:"runs"`
}

// run is a system's run of a scenario; of several rounds' runs, their medians (medianRun).
func (r *report) run(scenario, system string) (runResult, bool) {
	var runs []runResult
	for _, x := range r.Runs {
		if x.Scenario == scenario && x.System == system {
			runs = append(runs, x)
		}
	}
	if len(runs) == 0 {
		return runResult{}, false
	}
	return medianRun(runs), true
}

// build turns runs into rows, adding the derived admission ratio.
func (r *report) build(list []Scenario, quick bool) {
	for _, sc := range list {
		for _, row := range sc.Rows {
			tr := tableRow{Label: row.Label, Unit: row.Unit, Higher: row.Higher, Values: map[string]float64{}, Notes: map[string]string{}}
			for _, sys := range r.Systems {
				x, ok := r.run(sc.Name, sys)
				switch {
				case !ok:
				case x.Error != "":
					tr.Notes[sys] = "failed: " + firstLine(x.Error)
				default:
					if v, ok := x.Metrics[row.Key]; ok {
						tr.Values[sys] = v
					}
					var notes []string
					for _, n := range []string{x.Note, x.RowNotes[row.Key]} {
						if n != "" {
							notes = append(notes, n)
						}
					}
					_, has := tr.Values[sys]
					if len(notes) > 0 && (has || row.Key != mJobsPerSecBulk) {
						// A system without a bulk path has nothing to
						// say on that row; its scenario note is on the
						// batch row above.
						tr.Notes[sys] = strings.Join(notes, "; ")
					}
				}
			}
			if len(tr.Values) == 0 && row.Key == mJobsPerSecBulk {
				// Only systems with a bulk path have this row.
				continue
			}
			r.Rows = append(r.Rows, tr)
		}
	}

	ratio, hi, lo := admissionRatioRow(quick)
	hasHi := slices.ContainsFunc(list, func(s Scenario) bool { return s.Name == hi })
	hasLo := slices.ContainsFunc(list, func(s Scenario) bool { return s.Name == lo })
	if !hasHi || !hasLo {
		return
	}
	tr := tableRow{Label: ratio.Label, Unit: ratio.Unit, Values: map[string]float64{}}
	for _, sys := range r.Systems {
		h, okh := r.run(hi, sys)
		l, okl := r.run(lo, sys)
		if !okh || !okl || h.Error != "" || l.Error != "" {
			continue
		}
		hv, lv := h.Metrics[mUsPerJob], l.Metrics[mUsPerJob]
		if lv > 0 {
			tr.Values[sys] = hv / lv
		}
	}
	// Place it right after the last admission row.
	at := len(r.Rows)
	for i, row := range r.Rows {
		if strings.HasPrefix(row.Label, "admission @") {
			at = i + 1
		}
	}
	r.Rows = slices.Insert(r.Rows, at, tr)
}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeTable prints the markdown table. Ratio columns (headgate/peer) appear
// only when headgate ran; a ratio above 1 is better for "higher" rows and
// worse for "lower" rows, hence the better column.
func (r *report) writeTable(w io.Writer) {
	var peers []string
	if slices.Contains(r.Systems, "headgate") {
		for _, s := range r.Systems {
			if s != "headgate" {
				peers = append(peers, s)
			}
		}
	}
	head := []string{"scenario", "unit", "better"}
	head = append(head, r.Systems...)
	for _, p := range peers {
		head = append(head, "headgate/"+p)
	}
	head = append(head, "note")

	lines := [][]string{head}
	for _, row := range r.Rows {
		better := "lower"
		if row.Higher {
			better = "higher"
		}
		cells := []string{row.Label, row.Unit, better}
		for _, s := range r.Systems {
			if v, ok := row.Values[s]; ok {
				cells = append(cells, formatNum(v))
			} else {
				cells = append(cells, "—")
			}
		}
		for _, p := range peers {
			h, okh := row.Values["headgate"]
			v, okp := row.Values[p]
			if okh && okp && v != 0 {
				cells = append(cells, formatRatio(h/v))
			} else {
				cells = append(cells, "—")
			}
		}
		var notes []string
		for _, s := range r.Systems {
			if n := row.Notes[s]; n != "" {
				notes = append(notes, s+": "+n)
			}
		}
		cells = append(cells, strings.Join(notes, "; "))
		lines = append(lines, cells)
	}

	widths := make([]int, len(head))
	for _, l := range lines {
		for i, c := range l {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for i, l := range lines {
		fmt.Fprintln(w, mdRow(l, widths))
		if i == 0 {
			sep := make([]string, len(l))
			for j := range sep {
				// Numbers right-aligned; labels and notes left.
				if j >= 3 && j < len(l)-1 {
					sep[j] = strings.Repeat("-", widths[j]-1) + ":"
				} else {
					sep[j] = strings.Repeat("-", widths[j])
				}
			}
			fmt.Fprintln(w, "| "+strings.Join(sep, " | ")+" |")
		}
	}
	mode := "full"
	if r.Env.Quick {
		mode = "quick"
	}
	load := ""
	if r.Env.LoadStart != "" {
		load = fmt.Sprintf(", load %s→%s", r.Env.LoadStart, r.Env.LoadEnd)
	}
	src := ""
	if r.Env.HeadgateSource != "" {
		src = ", headgate " + r.Env.HeadgateSource
	}
	stores := ""
	for _, st := range r.Env.Stores {
		stores += "; " + st
	}
	kept := "completed jobs not kept"
	if slices.Contains(r.Systems, "river") {
		kept += " (River: no delete-on-complete; its completed rows stay until its cleaner's 24 h retention)"
	}
	fmt.Fprintf(w, "\nredis %s (%s)%s; %d CPUs%s, %s%s, %s run, %.0f s; concurrency %d, %d producers, batches of %d; %s.\n",
		r.Env.RedisVersion, r.Env.RedisPersistence, stores, r.Env.CPUs, load, r.Env.GoVersion, src, mode, r.Seconds, concurrency, producers, batchSize, kept)
}

// formatRatio prints two decimals, and two significant digits below 0.1, so
// that a ratio of 0.0004 (0.42 ms against 1 s) does not read as 0.00x.
func formatRatio(r float64) string {
	if r != 0 && math.Abs(r) < 0.095 {
		return strconv.FormatFloat(r, 'g', 2, 64) + "x"
	}
	return fmt.Sprintf("%.2fx", r)
}

func mdRow(cells []string, widths []int) string {
	out := make([]string, len(cells))
	for i, c := range cells {
		c = strings.ReplaceAll(c, "|", `\|`)
		pad := widths[i] - len([]rune(c))
		if i >= 3 && i < len(cells)-1 {
			out[i] = strings.Repeat(" ", max(pad, 0)) + c
		} else {
			out[i] = c + strings.Repeat(" ", max(pad, 0))
		}
	}
	return "| " + strings.Join(out, " | ") + " |"
}

// formatNum keeps three or so significant digits, with thousands separators
// for large values so 52,340 jobs/s reads at a glance.
func formatNum(v float64) string {
	// Thresholds sit just below each power of ten so that 99.97 prints as
	// "100", not "100.0".
	switch a := math.Abs(v); {
	case a >= 999.5:
		return thousands(int64(math.Round(v)))
	case a >= 99.95:
		return fmt.Sprintf("%.0f", v)
	case a >= 9.995:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.9995:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// summary is the one-line progress report of a run.
func summary(sc Scenario, res Result) string {
	var parts []string
	for _, row := range sc.Rows {
		if v, ok := res.Metrics[row.Key]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s %s", row.Label, formatNum(v), row.Unit))
		}
	}
	out := strings.Join(parts, ", ")
	if res.Note != "" {
		out += " (" + res.Note + ")"
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
