package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// scriptCalls counts the script calls a client sends, by script (FCALL's function name,
// or "evalsha" for EVALSHA), so that -commands can print how many jobs each call carried:
// a phase's cost per job depends on it (each call has a fixed cost).
type scriptCalls struct {
	mu sync.Mutex
	n  map[string]int64
}

func (s *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.count(cmd)
		return next(ctx, cmd)
	}
}

func (s *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			s.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (s *scriptCalls) count(cmd redis.Cmder) {
	name := strings.ToLower(cmd.Name())
	switch name {
	case "fcall", "fcall_ro":
		if args := cmd.Args(); len(args) > 1 {
			name = fmt.Sprint(args[1])
		}
	case "evalsha", "evalsha_ro", "eval", "eval_ro":
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int64{}
	}
	s.n[name]++
}

// snapshot returns the counts so far.
func (s *scriptCalls) snapshot() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int64, len(s.n))
	for k, v := range s.n {
		m[k] = v
	}
	return m
}

// printSince prints the calls of each script since before, and the jobs per call.
func (s *scriptCalls) printSince(before map[string]int64, jobs int) {
	after := s.snapshot()
	var names []string
	for k, v := range after {
		if v > before[k] {
			names = append(names, k)
		}
	}
	sort.Slice(names, func(a, b int) bool { return after[names[a]]-before[names[a]] > after[names[b]]-before[names[b]] })
	for _, k := range names {
		d := after[k] - before[k]
		fmt.Printf("    script %-13s %8d calls %8.1f jobs/call\n", k, d, float64(jobs)/float64(d))
	}
}
