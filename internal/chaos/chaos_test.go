//go:build linux

package chaos

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// EnvLong, when true, makes TestChaos run the long suite (as -chaos.long does).
const EnvLong = "HEADGATE_CHAOS_LONG"

var (
	long = flag.Bool("chaos.long", false, "run the long chaos suite (or set "+EnvLong+"=1)")
	only = flag.String("chaos.run", "", "comma-separated scenario names to run (default: all)")
)

func TestMain(m *testing.M) {
	WorkerMain() // a re-executed test binary is a chaos worker
	// Producers log every failed dial while a server is down; the reports say what matters.
	redis.SetLogger(quietLogger{})
	redistest.Main(m)
}

// TestChaos runs every scenario and fails on any lost acknowledged job, accepted stale
// write or stuck job. The short run (the default, in CI) takes about two minutes; the long
// one (-chaos.long or HEADGATE_CHAOS_LONG=1) runs twenty thousand jobs per scenario and
// more, longer faults.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite starts servers and worker processes; skipped in -short mode")
	}
	isLong := *long
	if v, err := strconv.ParseBool(os.Getenv(EnvLong)); err == nil && v {
		isLong = true
	}
	opts := Options{
		Jobs: 1500, Producers: 3, Rate: 400,
		Workers: 3, Concurrency: 4, Lease: time.Second,
		WorkMin: 2 * time.Millisecond, WorkMax: 10 * time.Millisecond,
		Rounds: 3, Gap: 300 * time.Millisecond, Outage: 2 * time.Second, Settle: 20 * time.Second,
	}
	if isLong {
		opts.Jobs, opts.Producers, opts.Rate, opts.Workers, opts.Concurrency = 20_000, 4, 800, 10, 8
		opts.Rounds, opts.Gap, opts.Outage, opts.Settle = 8, 2*time.Second, 8*time.Second, 60*time.Second
	}
	control := redistest.Start(t)
	opts.Control = control.Client(t)
	opts.Dir = t.TempDir()
	opts.WorkerCommand = func() *exec.Cmd { return exec.Command(os.Args[0], "-test.run=^$") }
	opts.Logf = t.Logf

	var reports []*Report
	for _, sc := range Scenarios(t, opts) {
		if *only != "" && !strings.Contains(","+*only+",", ","+sc.Name+",") {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			// A scenario's time is bounded: setup, load and every round with its
			// recovery, then the drain.
			budget := 2*time.Minute + time.Duration(opts.Rounds)*(opts.Outage+opts.Settle+opts.Gap) + opts.Settle
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			o := opts
			o.Logf = t.Logf
			rep, err := Execute(ctx, sc, o)
			if err != nil {
				t.Fatal(err)
			}
			reports = append(reports, rep)
			t.Logf("%s: %d jobs acknowledged of %d, %d executions (%d duplicates), %d lost, %d stuck, "+
				"stale writes %d accepted / %d refused, %d faults, longest recovery %s, in %s",
				rep.Scenario, rep.Acknowledged, rep.Enqueued, rep.Executions, rep.Duplicates, rep.Lost, rep.Stuck,
				rep.StaleAccepted, rep.StaleRefused, rep.Faults, rep.Recovery.Round(time.Millisecond),
				rep.Elapsed.Round(time.Millisecond))
			if rep.Acknowledged != rep.Enqueued {
				t.Errorf("%d of %d jobs were acknowledged: producers gave up", rep.Acknowledged, rep.Enqueued)
			}
			if rep.StaleRefused == 0 {
				t.Errorf("no stale write was attempted: the probe did not run")
			}
			for _, v := range rep.Violations() {
				t.Error(v)
			}
		})
	}
	t.Logf("chaos suite (long=%v):\n%s", isLong, Table(reports))
}
