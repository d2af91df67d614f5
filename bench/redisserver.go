package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is the harness's private redis-server, loopback only. Having
// our own server is what makes FLUSHALL between runs safe.
//
// By default it has no persistence and writes no files at all (no RDB, no
// AOF, log to stdout kept in memory), so a harness killed without clean-up
// leaves nothing behind; the kernel stops the server too (see childProcAttr).
// With -durable it keeps an append-only file in a temporary directory of its
// own, removed by Stop.
type redisServer struct {
	Addr string
	dir  string // AOF directory (-durable); "" without persistence
	cmd  *exec.Cmd
	log  *tail
	exit chan error
}

// durability is -durable: "" (no persistence), "always" or "everysec", the
// appendfsync policy of the private server's AOF.
type durability string

func (d *durability) String() string { return string(*d) }

// Set accepts -durable (= always), -durable=always, -durable=everysec and
// -durable=off.
func (d *durability) Set(v string) error {
	switch v {
	case "true", "always":
		*d = "always"
	case "everysec":
		*d = "everysec"
	case "false", "off", "":
		*d = ""
	default:
		return fmt.Errorf("want always, everysec or off, not %q", v)
	}
	return nil
}

// IsBoolFlag lets a bare -durable mean -durable=always.
func (d *durability) IsBoolFlag() bool { return true }

func startRedis(ctx context.Context, bin string, fsync durability) (*redisServer, error) {
	var lastErr error
	// The free port is found by binding and releasing it, so another process
	// can grab it in between; a couple of retries cover that race.
	for range 3 {
		s, err := tryStartRedis(ctx, bin, fsync)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func tryStartRedis(ctx context.Context, bin string, fsync durability) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	log := &tail{max: 8 << 10}
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--logfile", "", // stdout
	}
	dir := ""
	if fsync == "" {
		args = append(args, "--appendonly", "no", "--dir", os.TempDir()) // nothing is written there
	} else {
		// On the disk the temporary directory is on: an fsync to tmpfs
		// would cost nothing and prove nothing. Everything else is Redis's
		// default AOF set-up, background rewrites included.
		if dir, err = os.MkdirTemp("", "bench-redis-"); err != nil {
			return nil, err
		}
		args = append(args, "--appendonly", "yes", "--appendfsync", string(fsync), "--dir", dir)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		removeRedisDir(dir)
		return nil, fmt.Errorf("start %s: %w (install redis-server or pass -redis ADDR)", bin, err)
	}
	s := &redisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, log: log, exit: make(chan error, 1)}
	go func() { s.exit <- cmd.Wait() }()

	// Wait for the port with plain dials: go-redis would log every refused
	// dial of its pool while the server is still starting.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case werr := <-s.exit:
			removeRedisDir(dir)
			return nil, fmt.Errorf("redis-server exited at start (%v):%s", werr, lastLines(log.String(), 5))
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("redis-server did not listen on %s within 10s:%s", s.Addr, lastLines(log.String(), 5))
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("redis-server on %s did not answer PING: %w", s.Addr, err)
	}
	return s, nil
}

// Stop terminates the server and removes its AOF directory, if any. Only the
// process we started is signalled.
func (s *redisServer) Stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exit:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exit
	}
	removeRedisDir(s.dir)
}

func removeRedisDir(dir string) {
	if dir != "" && strings.HasPrefix(filepath.Base(dir), "bench-redis-") {
		_ = os.RemoveAll(dir)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail keeps the last max bytes written to it: enough of redis-server's log
// to explain a failed start, without growing over a long run.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\n  " + strings.Join(lines, "\n  ")
}
