package rqueue_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
)

type emailArgs struct {
	To      string            `msgpack:"to"`
	Subject string            `msgpack:"subject"`
	Headers map[string]string `msgpack:"headers,omitempty"`
}

func (emailArgs) Kind() string { return "email" }

// reportArgs carries defaults for its kind.
type reportArgs struct {
	Account string `msgpack:"account"`
}

func (reportArgs) Kind() string { return "report" }

func (reportArgs) EnqueueOpts() rqueue.EnqueueOpts {
	return rqueue.EnqueueOpts{Queue: "reports", Priority: 5, MaxAttempts: 3, Tags: []string{"report"}}
}

// orderArgs derive their id and partition from their fields.
type orderArgs struct {
	OrderID string `msgpack:"order_id"`
	Tenant  string `msgpack:"tenant"`
}

func (orderArgs) Kind() string { return "order" }

func (a orderArgs) EnqueueOpts() rqueue.EnqueueOpts {
	return rqueue.EnqueueOpts{ID: "order-" + a.OrderID, Partition: a.Tenant}
}

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

type testBundle struct {
	ctx    context.Context
	client *rqueue.Client
	store  *headgate.Store // the same namespace, for the test's own checks
}

// setup returns a client of a fresh namespace on rdb, with the store clock frozen at
// epoch.
func setup(t *testing.T, rdb redis.UniversalClient, cfg *rqueue.Config) *testBundle {
	t.Helper()
	if cfg == nil {
		cfg = &rqueue.Config{}
	}
	cfg.Namespace = redistest.Namespace(t)
	client, err := rqueue.NewClient(rdb, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	ctx := context.Background()
	store := client.Store()
	if err := store.FreezeClock(ctx, epoch); err != nil {
		t.Fatalf("FreezeClock: %v", err)
	}
	return &testBundle{ctx: ctx, client: client, store: store}
}

// mustEnqueue enqueues args with opts, failing the test on an error.
func (b *testBundle) mustEnqueue(t *testing.T, args rqueue.Args, opts *rqueue.EnqueueOpts) *rqueue.Result {
	t.Helper()
	res, err := b.client.Enqueue(b.ctx, args, opts)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return res
}

func (b *testBundle) job(t *testing.T, id string) *headgate.Job {
	t.Helper()
	j, err := b.store.GetJob(b.ctx, id)
	if err != nil {
		t.Fatalf("GetJob(%q): %v", id, err)
	}
	return j
}

func (b *testBundle) unfinished(t *testing.T, queue string) int64 {
	t.Helper()
	stats, err := b.store.QueueStats(b.ctx)
	if err != nil {
		t.Fatalf("QueueStats: %v", err)
	}
	for _, s := range stats {
		if s.Queue == queue {
			return s.Unfinished
		}
	}
	return 0
}

func TestEnqueue(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		t.Run("Defaults", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			args := emailArgs{To: "ada@example.com", Subject: "hi", Headers: map[string]string{"b": "2", "a": "1"}}
			res := b.mustEnqueue(t, args, nil)
			want := &rqueue.Result{ID: res.ID, Kind: "email", Queue: rqueue.QueueDefault,
				State: headgate.StateAvailable, ScheduledAt: epoch}
			if !resultEqual(res, want) {
				t.Fatalf("Enqueue = %+v, want %+v", res, want)
			}
			if len(res.ID) != rqueue.IDLen {
				t.Errorf("ID %q has %d characters, want a generated id of %d", res.ID, len(res.ID), rqueue.IDLen)
			}
			j := b.job(t, res.ID)
			if j.Kind != "email" || j.Queue != rqueue.QueueDefault || j.MaxAttempts != rqueue.MaxAttemptsDefault ||
				j.Retention != rqueue.RetentionDefault || j.Weight != 1 || j.Priority != 0 {
				t.Errorf("stored job = %+v, want the defaults", j.Envelope)
			}
			var got emailArgs
			if err := msgpack.Unmarshal(j.Payload, &got); err != nil {
				t.Fatalf("payload does not decode with msgpack.Unmarshal: %v", err)
			}
			if got.To != args.To || got.Subject != args.Subject || len(got.Headers) != 2 || got.Headers["a"] != "1" {
				t.Errorf("decoded payload = %+v, want %+v", got, args)
			}
		})

		t.Run("Options", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, &rqueue.Config{Queue: "mail", MaxAttempts: 7, Retention: time.Hour})
			at := epoch.Add(time.Minute)
			res, err := b.client.Enqueue(b.ctx, emailArgs{To: "x"}, &rqueue.EnqueueOpts{
				ID: "mail-1", Priority: 9, ScheduledAt: at, Partition: "tenant:1", Fingerprint: "fp-1",
				RateClass: "smtp", Weight: 3, Sticky: "w1", Tags: []string{"b", "a", "b"},
			})
			if err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
			want := &rqueue.Result{ID: "mail-1", Kind: "email", Queue: "mail", State: headgate.StateScheduled, ScheduledAt: at}
			if !resultEqual(res, want) {
				t.Fatalf("Enqueue = %+v, want %+v", res, want)
			}
			j := b.job(t, "mail-1")
			if j.Priority != 9 || j.PartitionKey != "tenant:1" || j.Fingerprint != "fp-1" || j.RateClass != "smtp" ||
				j.Weight != 3 || j.StickyWorker != "w1" || j.MaxAttempts != 7 || j.Retention != time.Hour ||
				!slices.Equal(j.Tags, []string{"a", "b"}) {
				t.Errorf("stored job = %+v", j.Envelope)
			}
		})

		t.Run("ArgsOptions", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			res := b.mustEnqueue(t, reportArgs{Account: "a"}, nil)
			j := b.job(t, res.ID)
			if j.Queue != "reports" || j.Priority != 5 || j.MaxAttempts != 3 || !slices.Equal(j.Tags, []string{"report"}) {
				t.Errorf("stored job = %+v, want the args' options", j.Envelope)
			}
			// The call's options win field by field.
			res, err := b.client.Enqueue(b.ctx, reportArgs{Account: "b"}, &rqueue.EnqueueOpts{Priority: 1, Tags: []string{}})
			if err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
			j = b.job(t, res.ID)
			if j.Queue != "reports" || j.Priority != 1 || j.MaxAttempts != 3 || len(j.Tags) != 0 {
				t.Errorf("stored job = %+v, want the call's priority and tags over the args'", j.Envelope)
			}
		})

		t.Run("ArgsDerivedID", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			first := b.mustEnqueue(t, orderArgs{OrderID: "7", Tenant: "acme"}, nil)
			again, err := b.client.Enqueue(b.ctx, orderArgs{OrderID: "7", Tenant: "acme"}, nil)
			if err != nil {
				t.Fatalf("Enqueue again: %v", err)
			}
			if first.ID != "order-7" || again.ID != "order-7" || first.Replayed || !again.Replayed {
				t.Errorf("enqueues = %+v, %+v; want order-7 written, then replayed", first, again)
			}
			if j := b.job(t, "order-7"); j.PartitionKey != "acme" {
				t.Errorf("partition = %q, want acme", j.PartitionKey)
			}
		})

		// A caller-chosen id replays only while its job is stored: a job deleted at success
		// (Retention 0, the default) frees its id, and the same enqueue runs the work again.
		t.Run("IDReplaysWhileTheJobIsStored", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			calls := 0
			complete := func(id string) {
				t.Helper()
				calls++ // a lease id is unique to its admission call
				c, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l-" + strconv.Itoa(calls),
					Queues: []string{rqueue.QueueDefault}, Capacity: 1, Lease: time.Minute})
				if err != nil || len(c) != 1 || c[0].Envelope.ID != id {
					t.Fatalf("admit %s: %+v, %v", id, c, err)
				}
				if _, err := b.store.Ack(b.ctx, c[0].LeaseRef(), headgate.OutcomeSuccess, nil); err != nil {
					t.Fatalf("ack %s: %v", id, err)
				}
			}
			b.mustEnqueue(t, emailArgs{To: "a"}, &rqueue.EnqueueOpts{ID: "hook-1"})
			complete("hook-1")
			if again := b.mustEnqueue(t, emailArgs{To: "a"}, &rqueue.EnqueueOpts{ID: "hook-1"}); again.Replayed ||
				again.State != headgate.StateAvailable {
				t.Errorf("enqueue after a success at retention 0 = %+v, want a new available job", again)
			}
			b.mustEnqueue(t, emailArgs{To: "b"}, &rqueue.EnqueueOpts{ID: "hook-2", Retention: time.Hour})
			complete("hook-1")
			complete("hook-2")
			if again := b.mustEnqueue(t, emailArgs{To: "b"}, &rqueue.EnqueueOpts{ID: "hook-2", Retention: time.Hour}); !again.Replayed ||
				again.State != headgate.StateCompleted {
				t.Errorf("enqueue of a retained completed id = %+v, want replayed, completed", again)
			}
		})

		t.Run("ScheduledIn", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			res := b.mustEnqueue(t, emailArgs{}, &rqueue.EnqueueOpts{ScheduledIn: 90 * time.Second})
			// Relative to the frozen store clock, not the host's.
			if want := epoch.Add(90 * time.Second); res.State != headgate.StateScheduled || !res.ScheduledAt.Equal(want) {
				t.Errorf("Enqueue = %s at %s, want scheduled at %s", res.State, res.ScheduledAt, want)
			}
			_, err := b.client.Enqueue(b.ctx, emailArgs{}, &rqueue.EnqueueOpts{ScheduledIn: time.Second, ScheduledAt: epoch})
			requireInvalid(t, err, "EnqueueOpts.ScheduledIn")
		})

		t.Run("PendingRelease", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			res := b.mustEnqueue(t, emailArgs{}, &rqueue.EnqueueOpts{Pending: true})
			if res.State != headgate.StatePending {
				t.Fatalf("State = %s, want pending", res.State)
			}
			left, err := b.client.Release(b.ctx, res.ID, "no-such-job")
			if err != nil {
				t.Fatalf("Release: %v", err)
			}
			if !slices.Equal(left, []string{"no-such-job"}) {
				t.Errorf("Release left %v, want [no-such-job]", left)
			}
			if j := b.job(t, res.ID); j.State != headgate.StateAvailable {
				t.Errorf("released job is %s, want available", j.State)
			}
		})

		t.Run("Retention", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, &rqueue.Config{Retention: time.Hour})
			res := b.mustEnqueue(t, emailArgs{}, &rqueue.EnqueueOpts{Retention: rqueue.RetentionNone})
			if j := b.job(t, res.ID); j.Retention != 0 {
				t.Errorf("Retention = %s, want 0 (RetentionNone overrides the config)", j.Retention)
			}
			_, err := b.client.Enqueue(b.ctx, emailArgs{}, &rqueue.EnqueueOpts{Retention: -time.Hour})
			requireInvalid(t, err, "EnqueueOpts.Retention")
		})

		t.Run("IdempotentID", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			opts := &rqueue.EnqueueOpts{ID: "order-42"}
			first := b.mustEnqueue(t, emailArgs{To: "a"}, opts)
			again, err := b.client.Enqueue(b.ctx, emailArgs{To: "a"}, opts)
			if err != nil {
				t.Fatalf("Enqueue again: %v", err)
			}
			if first.Replayed {
				t.Errorf("first enqueue reports Replayed")
			}
			want := *first
			want.Replayed = true
			if !resultEqual(again, &want) {
				t.Errorf("replay = %+v, want %+v", again, want)
			}
			if n := b.unfinished(t, rqueue.QueueDefault); n != 1 {
				t.Errorf("%d unfinished jobs after a replay, want 1", n)
			}
			_, err = b.client.Enqueue(b.ctx, reportArgs{}, &rqueue.EnqueueOpts{ID: "order-42", Queue: rqueue.QueueDefault})
			var conflict *headgate.IDConflictError
			if !errors.As(err, &conflict) || conflict.JobID != "order-42" {
				t.Errorf("Enqueue of a taken id with another kind: err = %v, want *IDConflictError", err)
			}
		})
	})
}

func TestEnqueueUnique(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		t.Run("Strict", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			opts := &rqueue.EnqueueOpts{Unique: rqueue.UniqueOpts{Key: "daily"}}
			first := b.mustEnqueue(t, emailArgs{To: "a"}, opts)
			dup, err := b.client.Enqueue(b.ctx, emailArgs{To: "b"}, opts)
			if err != nil {
				t.Fatalf("duplicate Enqueue: %v, want a Result", err)
			}
			want := &rqueue.Result{ID: first.ID, Kind: "email", Queue: rqueue.QueueDefault,
				State: headgate.StateAvailable, ScheduledAt: epoch, Duplicate: true}
			if !resultEqual(dup, want) {
				t.Errorf("duplicate = %+v, want %+v", dup, want)
			}
			// Another kind does not share the key.
			other, err := b.client.Enqueue(b.ctx, reportArgs{}, &rqueue.EnqueueOpts{Queue: rqueue.QueueDefault, Unique: opts.Unique})
			if err != nil || other.Duplicate {
				t.Errorf("Enqueue of another kind = %+v, %v; want a new job", other, err)
			}
		})

		t.Run("ByArgs", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			opts := &rqueue.EnqueueOpts{Unique: rqueue.UniqueOpts{ByArgs: true}}
			h1 := map[string]string{"x": "1", "y": "2", "z": "3", "w": "4"}
			h2 := map[string]string{"w": "4", "z": "3", "y": "2", "x": "1"}
			first := b.mustEnqueue(t, emailArgs{To: "a", Headers: h1}, opts)
			dup, err := b.client.Enqueue(b.ctx, emailArgs{To: "a", Headers: h2}, opts)
			if err != nil || !dup.Duplicate || dup.ID != first.ID {
				t.Errorf("Enqueue of equal args = %+v, %v; want a duplicate of %s", dup, err, first.ID)
			}
			other, err := b.client.Enqueue(b.ctx, emailArgs{To: "b", Headers: h1}, opts)
			if err != nil || other.Duplicate {
				t.Errorf("Enqueue of other args = %+v, %v; want a new job", other, err)
			}
		})

		t.Run("Debounce", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			opts := &rqueue.EnqueueOpts{Unique: rqueue.UniqueOpts{Key: "k", Debounce: 30 * time.Second}}
			first := b.mustEnqueue(t, emailArgs{Subject: "v1"}, opts)
			if first.State != headgate.StateScheduled || !first.ScheduledAt.Equal(epoch.Add(30*time.Second)) {
				t.Fatalf("first = %+v, want scheduled at epoch+30s", first)
			}
			if err := b.store.AdvanceClock(b.ctx, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			dup := b.mustEnqueue(t, emailArgs{Subject: "v2"}, opts)
			if !dup.Duplicate || !dup.Replaced || dup.ID != first.ID || !dup.ScheduledAt.Equal(epoch.Add(40*time.Second)) {
				t.Errorf("debounced duplicate = %+v, want %s replaced and pushed to epoch+40s", dup, first.ID)
			}
			var got emailArgs
			if err := msgpack.Unmarshal(b.job(t, first.ID).Payload, &got); err != nil || got.Subject != "v2" {
				t.Errorf("holder's payload = %+v, %v; want the latest args", got, err)
			}
		})

		t.Run("ThrottleOutlivesJob", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			opts := &rqueue.EnqueueOpts{Unique: rqueue.UniqueOpts{Key: "hourly", Window: time.Hour}}
			first := b.mustEnqueue(t, emailArgs{}, opts)
			claims, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{rqueue.QueueDefault},
				Capacity: 1, Lease: time.Minute})
			if err != nil || len(claims) != 1 {
				t.Fatalf("Admit = %v, %v", claims, err)
			}
			if _, err := b.store.Ack(b.ctx, claims[0].LeaseRef(), headgate.OutcomeSuccess, nil); err != nil {
				t.Fatalf("Ack: %v", err)
			}
			dup := b.mustEnqueue(t, emailArgs{}, opts)
			want := &rqueue.Result{ID: first.ID, Kind: "email", Queue: rqueue.QueueDefault, State: headgate.StateDeleted, Duplicate: true}
			if !resultEqual(dup, want) {
				t.Errorf("duplicate of a deleted holder = %+v, want %+v", dup, want)
			}
			if err := b.store.AdvanceClock(b.ctx, time.Hour); err != nil {
				t.Fatal(err)
			}
			next, err := b.client.Enqueue(b.ctx, emailArgs{}, opts)
			if err != nil || next.Duplicate {
				t.Errorf("Enqueue after the window = %+v, %v; want a new job", next, err)
			}
		})
	})
}

func TestEnqueueMany(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		t.Run("Batch", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			res, err := b.client.EnqueueMany(b.ctx, []rqueue.EnqueueParams{
				{Args: emailArgs{To: "a"}},
				{Args: reportArgs{}, Opts: &rqueue.EnqueueOpts{ScheduledIn: time.Minute}},
				{Args: emailArgs{To: "c"}, Opts: &rqueue.EnqueueOpts{Pending: true}},
			})
			if err != nil {
				t.Fatalf("EnqueueMany: %v", err)
			}
			want := []rqueue.Result{
				{Kind: "email", Queue: rqueue.QueueDefault, State: headgate.StateAvailable, ScheduledAt: epoch},
				{Kind: "report", Queue: "reports", State: headgate.StateScheduled, ScheduledAt: epoch.Add(time.Minute)},
				{Kind: "email", Queue: rqueue.QueueDefault, State: headgate.StatePending, ScheduledAt: epoch},
			}
			if len(res) != len(want) {
				t.Fatalf("EnqueueMany returned %d results, want %d", len(res), len(want))
			}
			for i := range want {
				want[i].ID = res[i].ID
				if !resultEqual(res[i], &want[i]) {
					t.Errorf("result[%d] = %+v, want %+v", i, res[i], want[i])
				}
				if i > 0 && res[i].ID <= res[i-1].ID {
					t.Errorf("ids %q, %q are not increasing", res[i-1].ID, res[i].ID)
				}
			}
		})

		t.Run("AllOrNothing", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			if _, err := b.client.Enqueue(b.ctx, emailArgs{}, &rqueue.EnqueueOpts{ID: "held", Unique: rqueue.UniqueOpts{Key: "k"}}); err != nil {
				t.Fatal(err)
			}
			// An invalid job refuses the batch before it reaches Redis.
			_, err := b.client.EnqueueMany(b.ctx, []rqueue.EnqueueParams{{Args: emailArgs{}}, {Args: nil}})
			requireInvalid(t, err, "params[1].Args")
			// A unique hit refuses the whole batch.
			_, err = b.client.EnqueueMany(b.ctx, []rqueue.EnqueueParams{
				{Args: emailArgs{}},
				{Args: emailArgs{}, Opts: &rqueue.EnqueueOpts{Unique: rqueue.UniqueOpts{Key: "k"}}},
			})
			var dup *headgate.DuplicateError
			if !errors.As(err, &dup) || dup.ExistingID != "held" {
				t.Errorf("EnqueueMany with a duplicate: err = %v, want *DuplicateError of held", err)
			}
			if n := b.unfinished(t, rqueue.QueueDefault); n != 1 {
				t.Errorf("%d unfinished jobs, want only the holder", n)
			}
		})

		t.Run("Backpressure", func(t *testing.T) {
			t.Parallel()
			b := setup(t, rdb, nil)
			if err := b.store.SetEnqueueLimit(b.ctx, "small", 2); err != nil {
				t.Fatal(err)
			}
			opts := &rqueue.EnqueueOpts{Queue: "small"}
			_, err := b.client.EnqueueMany(b.ctx, []rqueue.EnqueueParams{{Args: emailArgs{}, Opts: opts},
				{Args: emailArgs{}, Opts: opts}, {Args: emailArgs{}, Opts: opts}})
			var bp *headgate.BackpressureError
			if !errors.As(err, &bp) || bp.Queue != "small" || bp.Limit != 2 || bp.Current != 0 || bp.Incoming != 3 {
				t.Fatalf("EnqueueMany over the limit: err = %v, want *BackpressureError{small 2 0 3}", err)
			}
			if n := b.unfinished(t, "small"); n != 0 {
				t.Errorf("%d unfinished jobs after a refused batch, want 0", n)
			}
			if _, err := b.client.EnqueueMany(b.ctx, []rqueue.EnqueueParams{{Args: emailArgs{}, Opts: opts},
				{Args: emailArgs{}, Opts: opts}}); err != nil {
				t.Errorf("EnqueueMany within the limit: %v", err)
			}
		})
	})
}

// TestEnqueueValidation: what the client refuses, or answers, before anything reaches
// Redis needs one backend.
func TestEnqueueValidation(t *testing.T) {
	t.Parallel()
	rdb := redistest.Miniredis(t)
	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t, rdb, nil)
		_, err := b.client.Enqueue(b.ctx, nil, nil)
		requireInvalid(t, err, "args")
		_, err = b.client.Enqueue(b.ctx, emailArgs{}, &rqueue.EnqueueOpts{Queue: "a:b"})
		requireInvalid(t, err, "EnqueueOpts.Queue")
		_, err = b.client.Enqueue(b.ctx, emailArgs{}, &rqueue.EnqueueOpts{Unique: rqueue.UniqueOpts{Window: time.Minute}})
		requireInvalid(t, err, "EnqueueOpts.Unique.Key")
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		b := setup(t, rdb, nil)
		res, err := b.client.EnqueueMany(b.ctx, nil)
		if res != nil || err != nil {
			t.Errorf("EnqueueMany(nil) = %v, %v; want nil, nil", res, err)
		}
	})
}

func TestNewClientConfig(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = rdb.Close() })
	for _, tc := range []struct {
		name  string
		cfg   *rqueue.Config
		field string
	}{
		{"Nil", nil, "Config.Namespace"},
		{"NoNamespace", &rqueue.Config{}, "Config.Namespace"},
		{"BraceNamespace", &rqueue.Config{Namespace: "a{b}"}, "Config.Namespace"},
		{"ColonQueue", &rqueue.Config{Namespace: "n", Queue: "a:b"}, "Config.Queue"},
		{"NegativeMaxAttempts", &rqueue.Config{Namespace: "n", MaxAttempts: -1}, "Config.MaxAttempts"},
		{"NegativeRetention", &rqueue.Config{Namespace: "n", Retention: -time.Second}, "Config.Retention"},
		{"NegativeDurableReplicas", &rqueue.Config{Namespace: "n", DurableReplicas: -1}, "Config.DurableReplicas"},
		{"NegativeDurableTimeout", &rqueue.Config{Namespace: "n", DurableReplicas: 1, DurableTimeout: -time.Second}, "Config.DurableTimeout"},
		{"TinyDurableTimeout", &rqueue.Config{Namespace: "n", DurableReplicas: 1, DurableTimeout: time.Microsecond}, "Config.DurableTimeout"},
		{"NilEnqueueMiddleware", &rqueue.Config{Namespace: "n", EnqueueMiddleware: []rqueue.EnqueueMiddleware{nil}}, "Config.EnqueueMiddleware[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := rqueue.NewClient(rdb, tc.cfg)
			requireInvalid(t, err, tc.field)
		})
	}

	c, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "n"})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	want := rqueue.Config{Namespace: "n", Queue: rqueue.QueueDefault, MaxAttempts: rqueue.MaxAttemptsDefault,
		Retention: rqueue.RetentionDefault, Logger: slog.Default()}
	if got := c.Config(); !reflect.DeepEqual(got, want) {
		t.Errorf("Config() = %+v, want %+v", got, want)
	}
}

func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var inv *headgate.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("err = %v, want *headgate.InvalidError for %s", err, field)
	}
	if inv.Field != field {
		t.Fatalf("InvalidError names %q (%v), want %q", inv.Field, err, field)
	}
}

func resultEqual(a, b *rqueue.Result) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.Queue == b.Queue && a.State == b.State &&
		a.ScheduledAt.Equal(b.ScheduledAt) && a.Duplicate == b.Duplicate && a.Replaced == b.Replaced &&
		a.Replayed == b.Replayed
}
