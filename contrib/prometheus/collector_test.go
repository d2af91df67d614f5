package headgateprom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	headgateprom "github.com/headgate/headgate/contrib/prometheus"
)

var epoch = time.UnixMilli(1_750_000_000_000)

// commandCounter is a go-redis hook that counts the commands sent, pipelined or not,
// except the handshake of a new connection.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) count(cmds ...redis.Cmder) {
	for _, cmd := range cmds {
		switch cmd.Name() {
		case "hello", "client", "auth", "select", "ping":
		default:
			c.n.Add(1)
		}
	}
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.count(cmds...)
		return next(ctx, cmds)
	}
}

func newRedis(t *testing.T) (*redis.Client, *commandCounter) {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	cc := &commandCounter{}
	rdb.AddHook(cc)
	return rdb, cc
}

func newStore(t *testing.T, rdb redis.UniversalClient, ns string) *headgate.Store {
	t.Helper()
	s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns, CrashLimit: 1})
	mustOK(t, err)
	mustOK(t, s.FreezeClock(context.Background(), epoch))
	return s
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// knownState puts a namespace in a state whose every gauge is known: queue "mail" with
// two available jobs (partition acme due a minute before the epoch, globex at it) and
// one scheduled, paused; queue "reports" with one job acked as a success (and deleted:
// no retention), one archived after its only attempt failed, one parked by its rate class, a limit of 10 and one enqueue it
// refused; queue "crashy" with one quarantined
// job whose late ack was rejected; rate class "api" (burst 5) charged 3 tokens and
// refilled 1 since.
func knownState(t *testing.T, s *headgate.Store) {
	t.Helper()
	ctx := context.Background()
	mustOK(t, s.SetRateLimit(ctx, "api", headgate.RateLimit{Limit: 1, Window: time.Second, Burst: 5}))
	_, err := s.Enqueue(ctx,
		headgate.Envelope{ID: "m1", Kind: "email", Queue: "mail", PartitionKey: "acme", ScheduledAt: epoch.Add(-time.Minute)},
		headgate.Envelope{ID: "m2", Kind: "email", Queue: "mail", PartitionKey: "globex"},
		headgate.Envelope{ID: "m3", Kind: "email", Queue: "mail", ScheduledIn: time.Hour},
		headgate.Envelope{ID: "r0", Kind: "report", Queue: "reports"},
		headgate.Envelope{ID: "r1", Kind: "report", Queue: "reports", RateClass: "api", Weight: 2, MaxAttempts: 1},
		headgate.Envelope{ID: "c1", Kind: "crash", Queue: "crashy", RateClass: "api", Fingerprint: "fp-1"},
	)
	mustOK(t, err)
	claims, err := s.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l1", Queues: []string{"reports", "crashy"},
		Capacity: 3, Lease: 500 * time.Millisecond})
	mustOK(t, err)
	if len(claims) != 3 {
		t.Fatalf("admitted %d jobs, want 3", len(claims))
	}
	for _, c := range claims {
		switch c.Envelope.ID {
		case "r0":
			_, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeSuccess, nil)
			mustOK(t, err)
		case "r1":
			_, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeRetry, &headgate.AckOpts{Error: "no"})
			mustOK(t, err)
		}
	}
	mustOK(t, s.AdvanceClock(ctx, time.Second))
	rs, err := s.ReclaimExpired(ctx, 10)
	mustOK(t, err)
	if len(rs) != 1 || !rs[0].Quarantined {
		t.Fatalf("reclaimed %+v, want c1 quarantined", rs)
	}
	for _, c := range claims {
		if c.Envelope.ID == "c1" {
			if _, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeSuccess, nil); !errors.As(err, new(*headgate.LeaseRejectedError)) {
				t.Fatalf("ack of the reclaimed c1: %v, want LeaseRejectedError", err)
			}
		}
	}
	mustOK(t, s.PauseQueue(ctx, "mail"))
	mustOK(t, s.SetEnqueueLimit(ctx, "reports", 10))
	// r2 weighs more than the 3 tokens "api" holds: admission parks it.
	_, err = s.Enqueue(ctx, headgate.Envelope{ID: "r2", Kind: "report", Queue: "reports", RateClass: "api", Weight: 4})
	mustOK(t, err)
	if claims, err := s.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l2", Queues: []string{"reports"},
		Capacity: 1, Lease: time.Second}); err != nil || len(claims) != 0 {
		t.Fatalf("admit of r2: %d claims, %v; want it parked", len(claims), err)
	}
	over := make([]headgate.Envelope, 10)
	for i := range over {
		over[i] = headgate.Envelope{ID: fmt.Sprintf("o%d", i), Kind: "report", Queue: "reports"}
	}
	if _, err := s.Enqueue(ctx, over...); !errors.As(err, new(*headgate.BackpressureError)) {
		t.Fatalf("enqueue over the limit: %v, want BackpressureError", err)
	}
}

func TestCollectorExactValues(t *testing.T) {
	t.Parallel()
	rdb, _ := newRedis(t)
	knownState(t, newStore(t, rdb, "prom"))
	c, err := headgateprom.NewCollector(rdb, &headgateprom.CollectorConfig{Namespace: "prom", RateClasses: []string{"api", "unset"}})
	mustOK(t, err)

	var want strings.Builder
	want.WriteString("# HELP headgate_jobs Jobs by queue and state.\n# TYPE headgate_jobs gauge\n")
	counts := map[string]map[headgate.State]int{
		"crashy":  {headgate.StateQuarantined: 1},
		"mail":    {headgate.StateAvailable: 2, headgate.StateScheduled: 1},
		"reports": {headgate.StateArchived: 1, headgate.StateAvailable: 1}, // r2, parked by its class
	}
	for _, q := range []string{"crashy", "mail", "reports"} {
		for _, st := range headgate.States {
			fmt.Fprintf(&want, "headgate_jobs{namespace=\"prom\",queue=%q,state=%q} %d\n", q, st, counts[q][st])
		}
	}
	want.WriteString(`# HELP headgate_queue_unfinished_jobs Jobs of the queue not yet terminal (what an enqueue limit bounds).
# TYPE headgate_queue_unfinished_jobs gauge
headgate_queue_unfinished_jobs{namespace="prom",queue="crashy"} 0
headgate_queue_unfinished_jobs{namespace="prom",queue="mail"} 3
headgate_queue_unfinished_jobs{namespace="prom",queue="reports"} 1
# HELP headgate_queue_paused 1 while the queue is paused, else 0.
# TYPE headgate_queue_paused gauge
headgate_queue_paused{namespace="prom",queue="crashy"} 0
headgate_queue_paused{namespace="prom",queue="mail"} 1
headgate_queue_paused{namespace="prom",queue="reports"} 0
# HELP headgate_queue_enqueue_limit The queue's enqueue limit (absent when unbounded).
# TYPE headgate_queue_enqueue_limit gauge
headgate_queue_enqueue_limit{namespace="prom",queue="reports"} 10
# HELP headgate_quarantined_fingerprints Fingerprints in quarantine, waiting for an operator.
# TYPE headgate_quarantined_fingerprints gauge
headgate_quarantined_fingerprints{namespace="prom"} 1
# HELP headgate_rate_class_tokens Tokens the rate class holds at the store time of the scrape.
# TYPE headgate_rate_class_tokens gauge
headgate_rate_class_tokens{class="api",namespace="prom"} 3
# HELP headgate_lease_rejections_total Writes of workers (ack, renew, checkpoint, output, progress) refused because they no longer held the lease.
# TYPE headgate_lease_rejections_total counter
headgate_lease_rejections_total{namespace="prom"} 1
# HELP headgate_reclaims_total Jobs taken back after their lease expired.
# TYPE headgate_reclaims_total counter
headgate_reclaims_total{namespace="prom"} 1
# HELP headgate_rate_limited_total Jobs admission set aside because their rate class lacked the tokens.
# TYPE headgate_rate_limited_total counter
headgate_rate_limited_total{class="api",namespace="prom"} 1
# HELP headgate_backpressure_rejections_total Enqueue calls refused because the queue was at its enqueue limit.
# TYPE headgate_backpressure_rejections_total counter
headgate_backpressure_rejections_total{namespace="prom",queue="reports"} 1
# HELP headgate_jobs_completed_total Jobs acked as a success, fleet-wide (the store's outcome counters).
# TYPE headgate_jobs_completed_total counter
headgate_jobs_completed_total{namespace="prom",queue="reports"} 1
# HELP headgate_jobs_failed_total Attempts that failed (acked as retried, archived or undecodable, or a lease reclaimed after a crash), fleet-wide (the store's outcome counters).
# TYPE headgate_jobs_failed_total counter
headgate_jobs_failed_total{namespace="prom",queue="crashy"} 1
headgate_jobs_failed_total{namespace="prom",queue="reports"} 1
# HELP headgate_queue_available_partitions Partitions of the queue with available work (not pinned to a worker).
# TYPE headgate_queue_available_partitions gauge
headgate_queue_available_partitions{namespace="prom",queue="crashy"} 0
headgate_queue_available_partitions{namespace="prom",queue="mail"} 2
headgate_queue_available_partitions{namespace="prom",queue="reports"} 0
# HELP headgate_queue_oldest_available_seconds Longest wait since due of the next job of the partitions read (exact when the queue has no more partitions than PartitionsPerQueue).
# TYPE headgate_queue_oldest_available_seconds gauge
headgate_queue_oldest_available_seconds{namespace="prom",queue="crashy"} 0
headgate_queue_oldest_available_seconds{namespace="prom",queue="mail"} 61
headgate_queue_oldest_available_seconds{namespace="prom",queue="reports"} 0
# HELP headgate_partition_wait_seconds Time since the partition's next job was due, for the queue's next partitions in turn order.
# TYPE headgate_partition_wait_seconds gauge
headgate_partition_wait_seconds{namespace="prom",partition="acme",queue="mail"} 61
headgate_partition_wait_seconds{namespace="prom",partition="globex",queue="mail"} 1
`)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want.String())); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	mustOK(t, err)
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// A scrape's Redis cost is a fixed number of plain commands per namespace, whatever the
// number of jobs: 8 + 4 x queues + rate classes + partitions read (at most
// PartitionsPerQueue per queue).
func TestCollectorScrapeCostIsConstantInJobs(t *testing.T) {
	t.Parallel()
	rdb, cc := newRedis(t)
	s := newStore(t, rdb, "cost")
	c, err := headgateprom.NewCollector(rdb, &headgateprom.CollectorConfig{Namespace: "cost", RateClasses: []string{"api"}})
	mustOK(t, err)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	scrape := func() int64 {
		before := cc.n.Load()
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("Gather: %v", err)
		}
		return cc.n.Load() - before
	}
	enqueue := func(n int) {
		envs := make([]headgate.Envelope, n)
		for i := range envs {
			envs[i] = headgate.Envelope{ID: fmt.Sprintf("j%d-%d", n, i), Kind: "k", Queue: []string{"a", "b"}[i%2],
				PartitionKey: fmt.Sprintf("t%d", i%(2*n))}
		}
		_, err := s.Enqueue(context.Background(), envs...)
		mustOK(t, err)
	}
	enqueue(30) // 15 partitions per queue, more than the 10 read
	scrape()    // the collector's first scrape also reads the namespace's storage format, once
	small := scrape()
	enqueue(5000)
	large := scrape()
	if small != large {
		t.Errorf("scrape sent %d commands at 30 jobs and %d at 5030: not constant", small, large)
	}
	if want := int64(8 + 4*2 + 1 + 2*headgateprom.PartitionsPerQueueDefault); large != want {
		t.Errorf("scrape sent %d commands, want %d (8 + 4 x 2 queues + 1 rate class + 2 x 10 partitions)", large, want)
	}
	t.Logf("commands per scrape: %d at 30 jobs, %d at 5030 jobs", small, large)
}

func TestCollectorReportsRedisFailure(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := headgateprom.NewCollector(rdb, &headgateprom.CollectorConfig{Namespace: "down", ScrapeTimeout: time.Second})
	mustOK(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Gather with Redis down: %v, want the connection error", err)
	}
}

func TestNewCollectorRefusesBadConfig(t *testing.T) {
	t.Parallel()
	rdb, _ := newRedis(t)
	for name, cfg := range map[string]*headgateprom.CollectorConfig{
		"NoNamespace":      {},
		"EmptyClass":       {Namespace: "n", RateClasses: []string{""}},
		"NegativeTimeout":  {Namespace: "n", ScrapeTimeout: -time.Second},
		"PartitionsBelow":  {Namespace: "n", PartitionsPerQueue: -2},
		"PartitionsAbove":  {Namespace: "n", PartitionsPerQueue: 1001},
		"ColonInNamespace": {Namespace: "a{b"},
	} {
		if _, err := headgateprom.NewCollector(rdb, cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := headgateprom.NewCollector(nil, &headgateprom.CollectorConfig{Namespace: "n"}); err == nil {
		t.Errorf("nil client: no error")
	}
}
