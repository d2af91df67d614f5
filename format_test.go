package headgate_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestStorageFormat: a fresh namespace takes StorageFormat at the store's first call, and
// a namespace recorded in another format is refused with *FormatError naming both, before
// anything is written.
func TestStorageFormat(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		t.Run("fresh namespace gets the marker", func(t *testing.T) {
			ns := redistest.Namespace(t)
			s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Enqueue(ctx, headgate.Envelope{ID: "a", Kind: "k"}); err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
			got, err := rdb.Get(ctx, "hg:{"+ns+"}:format").Result()
			if err != nil || got != headgate.StorageFormat {
				t.Fatalf("format marker = %q, %v; want %q", got, err, headgate.StorageFormat)
			}
		})
		// Not only jobs: a workflow's history and a schedule are data another format
		// would misread, so the first of them marks a fresh namespace too.
		for name, store := range map[string]func(s *headgate.Store) error{
			"workflow start": func(s *headgate.Store) error {
				_, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "w", WorkflowType: "t"})
				return err
			},
			"append": func(s *headgate.Store) error {
				return s.Append(ctx, "w", []headgate.Event{{Seq: 1, Kind: headgate.EventWorkflowStarted,
					WorkflowType: "t", RunID: "r1"}}, 0)
			},
			"schedule": func(s *headgate.Store) error {
				_, err := s.AddSchedule(ctx, headgate.Schedule{Name: "s", Cron: "* * * * *", Job: headgate.Envelope{Kind: "k"}})
				return err
			},
		} {
			t.Run(name+" marks a fresh namespace", func(t *testing.T) {
				ns := redistest.Namespace(t)
				s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
				if err != nil {
					t.Fatal(err)
				}
				if err := store(s); err != nil {
					t.Fatal(err)
				}
				got, err := rdb.Get(ctx, "hg:{"+ns+"}:format").Result()
				if err != nil || got != headgate.StorageFormat {
					t.Fatalf("format marker = %q, %v; want %q", got, err, headgate.StorageFormat)
				}
			})
		}
		t.Run("other format refused", func(t *testing.T) {
			ns := redistest.Namespace(t)
			k := "hg:{" + ns + "}:format"
			if err := rdb.Set(ctx, k, "0", 0).Err(); err != nil {
				t.Fatal(err)
			}
			s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Enqueue(ctx, headgate.Envelope{ID: "a", Kind: "k"})
			var fe *headgate.FormatError
			if !errors.As(err, &fe) || fe.Found != "0" || fe.Want != headgate.StorageFormat || fe.Namespace != ns {
				t.Fatalf("Enqueue: %v, want *FormatError{Found 0, Want %s}", err, headgate.StorageFormat)
			}
			// The message says what to do, as the README's upgrade note does.
			if !strings.Contains(err.Error(), `drain the namespace with a build of format "0", or use a new namespace`) {
				t.Errorf("FormatError says %q; want it to say how to go on", err)
			}
			if _, err := s.GetJob(ctx, "a"); !errors.As(err, &fe) {
				t.Fatalf("GetJob: %v, want *FormatError", err)
			}
			n, err := rdb.Exists(ctx, "hg:{"+ns+"}:job:a").Result()
			if err != nil || n != 0 {
				t.Fatalf("job hash written under a refused format: exists=%d err=%v", n, err)
			}
		})
	})
}

// TestStorageFormatRefusedByEveryCall: the format check guards every call of a store,
// not only its scripts and GetJob: the operator reads (stats, policy, quarantine, ...)
// refuse a namespace of another format instead of reporting it empty, and the writes
// made without a script (pause, limits, rate limits, series) write nothing into it.
func TestStorageFormatRefusedByEveryCall(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		ns := redistest.Namespace(t)
		if err := rdb.Set(ctx, "hg:{"+ns+"}:format", "0", 0).Err(); err != nil {
			t.Fatal(err)
		}
		s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		calls := map[string]func() error{
			"QueueStats":      func() error { _, err := s.QueueStats(ctx); return err },
			"PartitionStats":  func() error { _, _, err := s.PartitionStats(ctx, "default", 0, 10); return err },
			"PartitionCounts": func() error { _, err := s.PartitionCounts(ctx, "default", "p"); return err },
			"Gauges":          func() error { _, err := s.Gauges(ctx, nil); return err },
			"CorruptJobs":     func() error { _, err := s.CorruptJobs(ctx); return err },
			"Quarantined":     func() error { _, err := s.Quarantined(ctx); return err },
			"Policy":          func() error { _, err := s.Policy(ctx); return err },
			"RateClass":       func() error { _, err := s.RateClass(ctx, "r"); return err },
			"ListSchedules":   func() error { _, _, err := s.ListSchedules(ctx, "", 10); return err },
			"Workers":         func() error { _, err := s.Workers(ctx); return err },
			"Series":          func() error { _, err := s.Series(ctx, time.Time{}); return err },
			"JobErrors":       func() error { _, err := s.JobErrors(ctx, "a"); return err },
			"JobProgress":     func() error { _, err := s.JobProgress(ctx, "a"); return err },
			"JobOutput":       func() error { _, err := s.JobOutput(ctx, "a"); return err },
			"GetWorkflow":     func() error { _, err := s.GetWorkflow(ctx, "w"); return err },
			"ListWorkflows":   func() error { _, err := s.ListWorkflows(ctx, headgate.WorkflowListRequest{PageSize: 10}); return err },
			"ListWorkerDeployments": func() error {
				_, _, err := s.ListWorkerDeployments(ctx, "", 10)
				return err
			},
			"PauseQueue":         func() error { return s.PauseQueue(ctx, "default") },
			"ResumeQueue":        func() error { return s.ResumeQueue(ctx, "default") },
			"SetEnqueueLimit":    func() error { return s.SetEnqueueLimit(ctx, "default", 5) },
			"RemoveEnqueueLimit": func() error { return s.RemoveEnqueueLimit(ctx, "default") },
			"SetRateLimit": func() error {
				return s.SetRateLimit(ctx, "r", headgate.RateLimit{Limit: 1, Window: time.Second, Burst: 1})
			},
			"RemoveRateLimit": func() error { return s.RemoveRateLimit(ctx, "r") },
			"RecordSeries":    func() error { _, err := s.RecordSeries(ctx, 0); return err },
		}
		for _, name := range slices.Sorted(maps.Keys(calls)) {
			var fe *headgate.FormatError
			if err := calls[name](); !errors.As(err, &fe) || fe.Found != "0" {
				t.Errorf("%s on a namespace of format 0 = %v, want *FormatError", name, err)
			}
		}
		node := rdb
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			m, err := cc.MasterForKey(ctx, "hg:{"+ns+"}:format")
			if err != nil {
				t.Fatal(err)
			}
			node = m
		}
		keys, err := node.Keys(ctx, headgate.KeyPattern(ns)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 {
			t.Errorf("keys of the refused namespace: %v, want only its format marker", keys)
		}
	})
}
