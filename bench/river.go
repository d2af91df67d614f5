package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// River is a PostgreSQL job queue, so it runs against the harness's private
// PostgreSQL cluster (pgserver.go) rather than the Redis server: one cluster
// for the whole harness run, River's migrations applied once, and every
// scenario run starting from empty River tables, as the Redis systems start
// from FLUSHALL.
//
// It is used through its public API: an insert-only river.Client for
// producers (Insert, InsertMany and, for bulk loads, InsertManyFast, which is
// COPY FROM), and a second Client with the worker registered and the default
// queue at MaxWorkers 50 for workers, each on a pgx pool of its own, as a
// producer and a worker process would have.
//
// Settings: River's defaults except FetchCooldown 2 ms and FetchPollInterval
// 20 ms, the values River's own benchmark (riverbench) runs with. With the
// defaults (100 ms cooldown, 1 s poll) one producer fetches at most ten times
// a second, which caps a worker near 500 jobs/s at this concurrency. The
// cooldown also limits how often an inserting client sends LISTEN/NOTIFY
// wake-ups, so both clients get the same values.
//
// Completed jobs: River has no delete-on-complete. A finished job is marked
// completed (batched by River's completer) and River's cleaner deletes such
// rows after CompletedJobRetentionPeriod (24 h by default); no run here lasts
// that long, so completed rows stay in river_job for the rest of the run.
//
// River has no partitions or per-key fair scheduling, so Job.Tenant is
// ignored and the fairness scenario runs every tenant through one FIFO
// queue, as for asynq and BullMQ.
func init() {
	register(&goSystem{
		name:     "river",
		open:     openRiver,
		avail:    riverAvailable,
		setup:    setupRiver,
		notRedis: true,
	})
}

const (
	riverKind          = "bench_noop"
	riverFetchCooldown = 2 * time.Millisecond
	riverFetchPoll     = 20 * time.Millisecond
	// riverPoolConns is each pgx pool's size: go-redis's default pool on
	// this 2-CPU machine is 20 connections (10 per CPU); pgxpool's default
	// (max(4, CPUs)) would hold 8 producers to 4 connections.
	riverPoolConns = 20
)

var (
	_ Queue              = (*riverQueue)(nil)
	_ BatchEnqueuer      = (*riverQueue)(nil)
	_ bulkBatchEnqueuer  = (*riverQueue)(nil)
	_ storedBytesCounter = (*riverQueue)(nil)
)

// riverPG is the cluster of this harness run, set by setupRiver.
var riverPG *pgServer

type riverArgs struct {
	// []byte is base64 in River's JSON args.
	Payload []byte `json:"p"`
}

func (riverArgs) Kind() string { return riverKind }

func riverAvailable() error {
	if _, err := findPostgres(); err != nil {
		return err
	}
	_, err := pgCredential()
	return err
}

// setupRiver starts the cluster and applies River's migrations.
func setupRiver(ctx context.Context) (string, func(), error) {
	srv, err := startPostgres(ctx)
	if err != nil {
		return "", nil, err
	}
	if err := migrateRiver(ctx, srv.DSN); err != nil {
		srv.Stop()
		return "", nil, err
	}
	riverPG = srv
	var fsync, sync string
	if err := pgShow(ctx, srv.DSN, map[string]*string{"fsync": &fsync, "synchronous_commit": &sync}); err != nil {
		srv.Stop()
		return "", nil, err
	}
	env := fmt.Sprintf("PostgreSQL %s (fsync %s, synchronous_commit %s)", strings.Fields(srv.Version)[0], fsync, sync)
	return env, func() { riverPG = nil; srv.Stop() }, nil
}

func migrateRiver(ctx context.Context, dsn string) error {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	return nil
}

func pgShow(ctx context.Context, dsn string, into map[string]*string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for name, dst := range into {
		if err := conn.QueryRow(ctx, "SHOW "+name).Scan(dst); err != nil {
			return fmt.Errorf("SHOW %s: %w", name, err)
		}
	}
	return nil
}

func newRiverPool(ctx context.Context) (*pgxpool.Pool, error) {
	if riverPG == nil {
		return nil, errors.New("no PostgreSQL cluster (setupRiver did not run)")
	}
	cfg, err := pgxpool.ParseConfig(riverPG.DSN)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = riverPoolConns
	return pgxpool.NewWithConfig(ctx, cfg)
}

func riverConfig() *river.Config {
	return &river.Config{
		FetchCooldown:     riverFetchCooldown,
		FetchPollInterval: riverFetchPoll,
		// Warnings and errors only, like asynq's WarnLevel.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

type riverQueue struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
}

// openRiver empties River's tables (the harness's FLUSHALL is for Redis)
// and opens the producers' client. addr, the Redis server, is not used.
func openRiver(ctx context.Context, _ string) (Queue, error) {
	pool, err := newRiverPool(ctx)
	if err != nil {
		return nil, err
	}
	if err := resetRiver(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	client, err := river.NewClient(riverpgxv5.New(pool), riverConfig())
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &riverQueue{pool: pool, client: client}, nil
}

// resetRiver truncates every River table but the migration record. TRUNCATE
// gives the tables new files, so no run inherits another's dead rows.
func resetRiver(ctx context.Context, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `SELECT quote_ident(tablename) FROM pg_tables
		WHERE schemaname = current_schema() AND tablename LIKE 'river\_%' AND tablename <> 'river_migration'`)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(tables) == 0 {
		return errors.New("no River tables: migrations did not run")
	}
	if _, err := pool.Exec(ctx, "TRUNCATE "+strings.Join(tables, ", ")+" RESTART IDENTITY"); err != nil {
		return fmt.Errorf("truncate River tables: %w", err)
	}
	return nil
}

func (q *riverQueue) Enqueue(ctx context.Context, j Job) error {
	_, err := q.client.Insert(ctx, riverArgs{Payload: j.Payload}, nil)
	return err
}

func insertParams(jobs []Job) []river.InsertManyParams {
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: riverArgs{Payload: j.Payload}}
	}
	return params
}

// EnqueueBatch is InsertMany: one multi-row INSERT per batch, in one
// transaction, returning the rows.
func (q *riverQueue) EnqueueBatch(ctx context.Context, jobs []Job) error {
	_, err := q.client.InsertMany(ctx, insertParams(jobs))
	return err
}

// EnqueueBulk is InsertManyFast: COPY FROM, in one transaction, returning
// only a count.
func (q *riverQueue) EnqueueBulk(ctx context.Context, jobs []Job) error {
	_, err := q.client.InsertManyFast(ctx, insertParams(jobs))
	return err
}

// StoredBytes is what river_job occupies on disk: heap, indexes and TOAST.
// The WAL the inserts wrote is not in it.
func (q *riverQueue) StoredBytes(ctx context.Context) (int64, error) {
	var n int64
	err := q.pool.QueryRow(ctx, "SELECT pg_total_relation_size('river_job')").Scan(&n)
	return n, err
}

// RowNotes implements rowNoter.
func (q *riverQueue) RowNotes(k Kind) map[string]string {
	const tuned = "tuned as riverbench: FetchCooldown 2 ms, FetchPollInterval 20 ms"
	switch k {
	case KindEnqueueBatch:
		return map[string]string{mJobsPerSec: "InsertMany", mJobsPerSecBulk: "InsertManyFast (COPY FROM)"}
	case KindE2E, KindIdleLatency:
		return map[string]string{mJobsPerSec: tuned, mP50: tuned, mP99: tuned}
	case KindAdmission:
		return map[string]string{mUsPerJob: tuned}
	case KindFairness:
		return map[string]string{mP50: tuned + "; no partitions: one FIFO queue", mAheadP99: "one FIFO queue"}
	}
	return nil
}

func (q *riverQueue) StoredBytesNote() string {
	return "pg_total_relation_size(river_job): table+indexes on disk, not RAM"
}

type riverHandler struct {
	river.WorkerDefaults[riverArgs]
	h Handler
}

func (w *riverHandler) Work(_ context.Context, job *river.Job[riverArgs]) error {
	w.h(job.Args.Payload)
	return nil
}

func (q *riverQueue) StartWorker(ctx context.Context, concurrency int, h Handler) (Worker, error) {
	pool, err := newRiverPool(ctx)
	if err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &riverHandler{h: h}); err != nil {
		pool.Close()
		return nil, err
	}
	cfg := riverConfig()
	cfg.Workers = workers
	cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: concurrency}}
	client, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("river client start: %w", err)
	}
	return &riverWorker{client: client, pool: pool}, nil
}

func (q *riverQueue) Close() error {
	q.pool.Close()
	return nil
}

type riverWorker struct {
	client *river.Client[pgx.Tx]
	pool   *pgxpool.Pool
}

// Stop is Client.Stop: it stops fetching, waits for running jobs and for the
// completer to write their completions, then stops River's background
// services; the pool is closed after.
func (w *riverWorker) Stop() error {
	err := w.client.Stop(context.Background())
	w.pool.Close()
	return err
}
