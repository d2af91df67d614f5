package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// bullmqSystem bridges to BullMQ, which only exists for Node. Each scenario
// runs entirely inside one `node bench.mjs <kind> <params-json>` process,
// producers and worker alike, because timing across a process boundary would
// measure the bridge instead of BullMQ. The script prints one JSON line with
// the same metric keys the Go runner uses.
type bullmqSystem struct {
	dir string // the bench/bullmq directory
}

func init() { register(&bullmqSystem{}) }

func (b *bullmqSystem) Name() string { return "bullmq" }

func (b *bullmqSystem) Available() error {
	if _, err := exec.LookPath("node"); err != nil {
		return errors.New("node not found")
	}
	if b.dir == "" {
		b.dir = findBullmqDir()
	}
	if b.dir == "" {
		return errors.New("bench/bullmq/bench.mjs not found; run from bench/ or pass -bullmq-dir")
	}
	if _, err := os.Stat(filepath.Join(b.dir, "node_modules", "bullmq", "package.json")); err != nil {
		return errors.New("run npm ci in bench/bullmq")
	}
	return nil
}

func (b *bullmqSystem) Run(ctx context.Context, sc Scenario) (Result, error) {
	params, err := json.Marshal(sc.Params)
	if err != nil {
		return Result{}, err
	}
	// The script enforces TimeoutMS itself; this outer bound only catches a
	// wedged process, so it leaves room for Node's start and clean-up.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(sc.Params.TimeoutMS)*time.Millisecond+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "bench.mjs", string(sc.Kind), string(params))
	cmd.Dir = b.dir
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return Result{}, fmt.Errorf("node bench.mjs %s: %w", sc.Kind, err)
	}
	// The result is the last line that parses; anything BullMQ itself writes
	// to stdout (a warning, say) comes before it and is ignored.
	var res Result
	found := false
	sc2 := bufio.NewScanner(bytes.NewReader(out))
	for sc2.Scan() {
		var r Result
		if json.Unmarshal(sc2.Bytes(), &r) == nil && r.Metrics != nil {
			res, found = r, true
		}
	}
	if !found {
		return Result{}, fmt.Errorf("node bench.mjs %s printed no result line; stdout was:\n%s", sc.Kind, out)
	}
	return res, nil
}

// findBullmqDir looks next to the working directory first (`go run .` from
// bench/), then next to this source file (go run from elsewhere).
func findBullmqDir() string {
	candidates := []string{"bullmq", filepath.Join("bench", "bullmq")}
	if _, file, _, ok := runtime.Caller(0); ok {
		candidates = append(candidates, filepath.Join(filepath.Dir(file), "bullmq"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(filepath.Join(c, "bench.mjs")); err == nil {
			abs, err := filepath.Abs(c)
			if err != nil {
				return c
			}
			return abs
		}
	}
	return ""
}
