package rqueuetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/headgate/headgate"
)

// storedJobs returns every job hash of the store's namespace, found by a scan of its
// keys: the ground truth the counts and indexes are checked against. Keys that are not
// hashes (a corruption case's damage) are left out.
func storedJobs(t testing.TB, ctx context.Context, s *headgate.Store) []*headgate.Job {
	t.Helper()
	names, err := scanNamespace(ctx, s)
	if err != nil {
		t.Fatalf("scan namespace: %v", err)
	}
	prefix := nsKey(s, "job:")
	slices.Sort(names)
	names = slices.Compact(names)
	var jobs []*headgate.Job
	for _, k := range names {
		id, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		if typ, err := s.Client().Type(ctx, k).Result(); err != nil || typ != "hash" {
			continue
		}
		j, err := s.GetJob(ctx, id)
		if err != nil {
			continue // unreadable: a corruption case's
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// checkIndexes holds the job indexes to the stored jobs: each job is in the index of its
// queue, state ("held" when held) and kind, and in the filter index of its partition,
// each tag (but the meta tags) and its fingerprint, and no index holds anything else; the counts of each
// partition, named or none (""), equal its jobs'. The names of the index keys are spelled here, as
// corrupt.go spells the keys it damages.
func checkIndexes(t testing.TB, ctx context.Context, s *headgate.Store, jobs []*headgate.Job) {
	t.Helper()
	p := nsKey(s, "")
	corrupt, err := s.Client().HKeys(ctx, p+"corrupt").Result()
	if err != nil && !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("read corrupt: %v", err)
	}
	want := map[string]map[string]bool{}        // index key -> ids
	wantCounts := map[string]map[string]int64{} // partition counts key -> state -> n
	blank := map[string][]*headgate.Job{}       // queue -> its jobs of no partition
	for _, j := range jobs {
		if slices.Contains(corrupt, j.ID) {
			continue
		}
		state := string(j.State)
		if j.Held {
			state = string(headgate.StateHeld)
		}
		base := p + "q:" + j.Queue + ":ix:" + state + ":" + j.Kind
		add := func(key string) {
			if want[key] == nil {
				want[key] = map[string]bool{}
			}
			want[key][j.ID] = true
		}
		add(base)
		if _, ok := blank[j.Queue]; !ok {
			blank[j.Queue] = nil // checked: no job of it may be counted as of no partition
		}
		count := func(key string) {
			if wantCounts[key] == nil {
				wantCounts[key] = map[string]int64{}
			}
			wantCounts[key][state]++
		}
		if j.PartitionKey != "" {
			add(base + "\x1fp\x1f" + j.PartitionKey)
			count(p + "q:" + j.Queue + ":pc:" + j.PartitionKey)
			count(p + "q:" + j.Queue + ":pcnamed")
		} else {
			blank[j.Queue] = append(blank[j.Queue], j)
		}
		for _, tag := range j.Tags {
			if !strings.HasPrefix(tag, headgate.MetaTagPrefix) {
				add(base + "\x1ft\x1f" + tag)
			}
		}
		if j.Fingerprint != "" {
			add(base + "\x1ff\x1f" + j.Fingerprint)
		}
	}
	names, err := scanNamespace(ctx, s)
	if err != nil {
		t.Fatalf("scan namespace: %v", err)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for _, k := range names {
		rest, ok := strings.CutPrefix(k, p+"q:")
		if !ok {
			continue
		}
		switch {
		case strings.Contains(rest, ":ix:"):
			members, err := s.Client().ZRange(ctx, k, 0, -1).Result()
			if err != nil {
				continue // damaged by a corruption case
			}
			for _, id := range members {
				if !want[k][id] && !slices.Contains(corrupt, id) {
					t.Errorf("index %q holds %s, which is not a job of it", k, id)
				}
				delete(want[k], id)
			}
		case strings.Contains(rest, ":pc:") || strings.HasSuffix(rest, ":pcnamed"):
			h, err := s.Client().HGetAll(ctx, k).Result()
			if err != nil {
				continue
			}
			for state, v := range h {
				n, _ := strconv.ParseInt(v, 10, 64)
				if n != wantCounts[k][state] {
					t.Errorf("partition counts %q: %s is %d, but %d jobs are", k, state, n, wantCounts[k][state])
				}
				delete(wantCounts[k], state)
			}
		}
	}
	for k, ids := range want {
		for id := range ids {
			t.Errorf("job %s is missing from index %q", id, k)
		}
	}
	for k, states := range wantCounts {
		for state, n := range states {
			t.Errorf("partition counts %q: %s is absent, but %d jobs are", k, state, n)
		}
	}
	// The jobs of no partition are counted as the queue's beyond its named partitions'.
	for q, jobs := range blank {
		want := map[headgate.State]int64{}
		for _, j := range jobs {
			if j.Held {
				want[headgate.StateHeld]++
			} else {
				want[j.State]++
			}
		}
		if len(corrupt) > 0 {
			break // a damaged job may be counted in its queue's counts and not its partition's
		}
		got, err := s.PartitionCounts(ctx, q, "")
		if err != nil {
			t.Fatalf("counts of queue %s's jobs of no partition: %v", q, err)
		}
		for _, st := range append(slices.Clone(headgate.States), headgate.StateHeld) {
			if got[st] != want[st] {
				t.Errorf("queue %s: %d jobs of no partition are %s, but PartitionCounts has %d", q, want[st], st, got[st])
			}
		}
	}
}

// listJobs returns every job of the store's namespace, ordered by id, through the job
// indexes: each queue, each state, every page.
func listJobs(ctx context.Context, store *headgate.Store) ([]*headgate.Job, error) {
	stats, err := store.QueueStats(ctx)
	if err != nil {
		return nil, err
	}
	var all []*headgate.Job
	for _, st := range stats {
		for _, state := range append(slices.Clone(headgate.States), headgate.StateHeld) {
			p := headgate.Page{Limit: headgate.ListLimitMax, Oldest: true}
			for {
				page, err := store.ListJobs(ctx, headgate.JobFilter{Queue: st.Queue, State: state}, p)
				if err != nil {
					return nil, fmt.Errorf("list %s jobs of queue %s: %w", state, st.Queue, err)
				}
				all = append(all, page.Jobs...)
				if page.Next == "" {
					break
				}
				p.Cursor = page.Next
			}
		}
	}
	slices.SortFunc(all, func(a, b *headgate.Job) int { return strings.Compare(a.ID, b.ID) })
	return all, nil
}
