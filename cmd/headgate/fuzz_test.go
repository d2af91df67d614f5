package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// unreachableRedis is where the fuzzed command lines connect: a loopback port nothing
// listens on, without retries, so a command that gets past parsing fails at once and no
// server is touched.
const unreachableRedis = "redis://127.0.0.1:1/?dial_timeout=200ms&max_retries=-1"

// FuzzRun runs arbitrary command lines ("\x00"-separated arguments): run never panics,
// exits 0, 1 or 2, and says why on stderr when it does not exit 0. Arguments naming a Redis
// server are dropped so every line uses unreachableRedis, and the demo is replaced by a
// stub (running it takes seconds).
func FuzzRun(f *testing.F) {
	for _, seed := range []string{
		"",
		"help",
		"-h",
		"stats",
		"-namespace\x00ns\x00stats",
		"-namespace\x00ns\x00jobs\x00-state\x00running\x00-limit\x00-5",
		"-namespace\x00ns\x00jobs\x00-limit\x00x",
		"jobs\x00-queue",
		"-namespace\x00ns\x00job",
		"-namespace\x00ns\x00job\x00id\x00extra",
		"-namespace\x00ns\x00cancel\x00a\x00b\x00--\x00-c",
		"-namespace\x00ns\x00limit\x00q\x00off",
		"-namespace\x00ns\x00limit\x00q\x00-1",
		"-namespace\x00ns\x00rate\x00c\x001\x001m\x002",
		"-namespace\x00ns\x00rate\x00c\x001\x00forever\x002",
		"-namespace\x00ns\x00quarantine\x00release",
		"-namespace\x00{bad}\x00stats",
		"nosuch",
		"demo\x00-workers\x000",
		"-namespace=ns\x00pause\x00q\x00-namespace",
	} {
		f.Add(seed)
	}
	saved := demoCommand
	demoCommand = func([]string, io.Writer, io.Writer) int { return exitOK }
	f.Cleanup(func() { demoCommand = saved })
	f.Setenv("REDIS_URL", unreachableRedis)
	f.Fuzz(func(t *testing.T, line string) {
		args := []string{"-redis", unreachableRedis}
		for _, a := range strings.Split(line, "\x00") {
			if name := strings.TrimLeft(a, "-"); name != a && strings.HasPrefix(name, "redis") {
				continue
			}
			args = append(args, a)
		}
		if line == "" {
			args = args[:2]
		}
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		switch {
		case code != exitOK && code != exitError && code != exitUsage:
			t.Errorf("run %q exited %d", args, code)
		case code != exitOK && stderr.Len() == 0:
			t.Errorf("run %q exited %d without a word on stderr", args, code)
		}
	})
}
