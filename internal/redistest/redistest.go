// Package redistest gives the project's tests a real redis-server.
//
// The queue relies on Lua scripts, blocking commands, key expiry and cluster
// slot routing, which fakes reproduce only approximately, so tests run
// against the real thing. Every server is started by the test binary itself
// on a free loopback port: tests must never touch a Redis that happens to be
// running on the machine (such as a system one on 6379), because CI machines
// start empty and developers' local data must not be at risk.
//
// Set HEADGATE_TEST_REDIS (and HEADGATE_TEST_CLUSTER) to point Shared (and
// SharedCluster) at an externally managed server instead. When redis-server is
// not installed, tests are skipped loudly unless HEADGATE_REQUIRE_REDIS=1,
// in which case they fail; set it in CI so that a missing binary cannot turn
// the whole suite into skips.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

const (
	// EnvAddr names an external Redis for Shared: "host:port" or a
	// redis:// / rediss:// URL.
	EnvAddr = "HEADGATE_TEST_REDIS"
	// EnvCluster names an external Redis Cluster for SharedCluster as a
	// comma-separated list of seed addresses.
	EnvCluster = "HEADGATE_TEST_CLUSTER"
	// EnvRequire, when "1" (or any true value), turns "redis-server not
	// found" from a skip into a test failure.
	EnvRequire = "HEADGATE_REQUIRE_REDIS"
)

const (
	// readyTimeout bounds how long a freshly spawned process may take to
	// answer. Startup of an empty, non-persistent server takes milliseconds;
	// the generous bound only absorbs loaded CI machines.
	readyTimeout = 10 * time.Second
	// startAttempts is how many ports are tried before giving up. Picking a
	// free port and binding it later is inherently racy, so a failed start
	// is retried on a fresh port.
	startAttempts = 5
	// logName is the file in the server's directory that receives its
	// stdout/stderr; its tail is quoted when startup fails.
	logName = "redis.log"
)

// Required reports whether HEADGATE_REQUIRE_REDIS asks for a missing
// redis-server to fail tests rather than skip them.
func Required() bool {
	v := strings.TrimSpace(os.Getenv(EnvRequire))
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b // an unparsable value errs on the side of strictness
}

// missingBinary skips or fails tb (per Required) because name is not on PATH;
// env names the variable that would point the tests at an external server.
// The skip is deliberately loud: a quietly skipped integration suite looks
// exactly like a passing one, so besides the per-test skip message a warning
// goes to stderr once per test binary, visible even without -v.
func missingBinary(tb testing.TB, name, env string) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%s=1 but %s not found on PATH: install Redis (redis-server, redis-cli) or set %s", EnvRequire, name, env)
	}
	msg := fmt.Sprintf("SKIPPING real-Redis test: %s not found on PATH; install it or set %s", name, env)
	warnOnce.Do(func() { fmt.Fprintf(os.Stderr, "WARNING: redistest: %s (set %s=1 to fail instead)\n", msg, EnvRequire) })
	tb.Skip(msg)
}

var warnOnce sync.Once

// lookBinary resolves name on PATH or skips/fails tb.
func lookBinary(tb testing.TB, name, env string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missingBinary(tb, name, env)
	}
	return p
}

// Server is a redis-server process owned by a test binary.
type Server struct {
	bin   string   // redis-server path
	dir   string   // private temp dir: working dir, log, cluster config
	extra []string // extra flags (cluster mode)

	mu     sync.Mutex
	port   int
	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed when cmd has been reaped
	closed bool
}

// Start starts a private redis-server for one test on a free loopback port;
// it is closed with tb.Cleanup. Use it when a test needs to own the process
// (Stop/Restart, server-wide commands such as FLUSHALL or CONFIG SET);
// otherwise prefer Shared, which costs nothing per test.
//
// If redis-server is not on PATH, Start calls tb.Fatalf when
// HEADGATE_REQUIRE_REDIS=1 and tb.Skipf with a loud message otherwise.
// HEADGATE_TEST_REDIS does not affect Start: the caller asked for a process
// it controls.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := lookBinary(tb, "redis-server", EnvAddr)
	s, err := newServer(bin, nil)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// newServer creates the server's temp dir and starts it, moving to a fresh
// port whenever the process fails to come up (typically because something
// else took the port between our probe and redis-server's bind).
func newServer(bin string, extra []string) (*Server, error) {
	sweepOnce.Do(sweepStaleDirs)
	dir, err := os.MkdirTemp("", dirPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("create temp dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerName), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("write owner file: %w", err)
	}
	s := &Server{bin: bin, dir: dir, extra: extra}
	cluster := len(extra) > 0
	var errs []error
	for range startAttempts {
		port, err := freePort(cluster)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.port = port
		if err := s.start(); err != nil {
			errs = append(errs, err)
			// A cluster node records its identity and port in nodes.conf;
			// start the next attempt from a clean slate.
			_ = os.Remove(filepath.Join(dir, "nodes.conf"))
			continue
		}
		return s, nil
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("could not start redis-server after %d attempts: %w", startAttempts, errors.Join(errs...))
}

const (
	// dirPrefix names the servers' temp dirs in os.TempDir().
	dirPrefix = "headgate-redis-"
	// ownerName is the file in a server's dir recording the PID of the test
	// binary that owns it.
	ownerName = "owner.pid"
)

var sweepOnce sync.Once

// sweepStaleDirs removes temp dirs left by test binaries that have exited
// without running Main (their servers died with them via the parent-death
// signal, but nothing removed the dirs). A dir is only removed when its
// owner process no longer exists, so concurrently running test binaries,
// e.g. the packages of `go test ./...`, are left alone.
func sweepStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerName))
		if err != nil {
			continue // not ours to judge
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// Addr returns the server's address, "127.0.0.1:port". It stays the same
// across Stop/Restart.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrLocked()
}

func (s *Server) addrLocked() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Dir returns the server's private directory (working dir and log file).
func (s *Server) Dir() string { return s.dir }

// Client returns a new go-redis client connected to the server, closed via
// tb.Cleanup. It uses go-redis defaults so tests see the same reconnect and
// retry behaviour as production code.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop kills the process with SIGKILL and waits for it to be reaped. SIGKILL
// rather than SHUTDOWN because tests use Stop to simulate Redis disappearing
// abruptly, and because nothing is persisted anyway. Stopping a stopped
// server is a no-op.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	return nil
}

func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	// Kill fails only if the process is already gone, which is the goal.
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd, s.exited = nil, nil
}

// Restart starts the server again on the same port, stopping it first if it
// is running, and returns once it answers. Clients created earlier keep
// their address, which is what tests of reconnect behaviour need. The data
// set starts empty (persistence is off), except that a cluster node rejoins
// its cluster from nodes.conf.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("redistest: Restart after Close")
	}
	s.stopLocked()
	// The port cannot change, so retrying is all we can do if something
	// grabbed it in the meantime.
	var errs []error
	for i := range startAttempts {
		if i > 0 {
			time.Sleep(time.Duration(i) * 100 * time.Millisecond)
		}
		err := s.start()
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("redistest: restart on %s: %w", s.addrLocked(), errors.Join(errs...))
}

// Close stops the server if it is running and removes its temp dir. It is
// safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	if !s.closed {
		s.closed = true
		_ = os.RemoveAll(s.dir)
	}
}

// running reports whether the process is up (as far as we started it).
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// args is the full redis-server command line. Persistence is disabled so
// servers start instantly and leave nothing behind; protected mode is off
// because tests connect without a password (the server only listens on
// loopback).
func (s *Server) args() []string {
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
		"--protected-mode", "no",
	}
	return append(args, s.extra...)
}

// start spawns the process on s.port and waits until it answers. The caller
// holds s.mu or has exclusive access to s.
func (s *Server) start() error {
	cmd, exited, err := spawn(s.dir, s.bin, s.args(), s.addrLocked())
	if err != nil {
		logPath := filepath.Join(s.dir, logName)
		return fmt.Errorf("redis-server on %s: %w\n--- tail of %s ---\n%s", s.addrLocked(), err, logPath, logTail(logPath, 20))
	}
	s.cmd, s.exited = cmd, exited
	return nil
}

// spawn runs bin with args in dir, its output appended to the log there, and waits until
// it answers on addr (waitReady). It returns the process and a channel closed when the
// process exits; a process that does not answer is killed and waited for.
func spawn(dir, bin string, args []string, addr string) (*exec.Cmd, chan struct{}, error) {
	// Append so that the log of a restarted server still shows earlier runs.
	logf, err := os.OpenFile(filepath.Join(dir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open log: %w", err)
	}
	// Closing our copy after Start is fine: the child holds its own descriptor.
	defer logf.Close()
	fmt.Fprintf(logf, "### redistest: starting %s %s\n", bin, strings.Join(quoteArgs(args), " "))

	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = dir, logf, logf, sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("exec %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	if err := waitReady(addr, cmd.Process.Pid, exited); err != nil {
		// Kill fails only if the process is already gone, which is the goal.
		_ = cmd.Process.Kill()
		<-exited
		return nil, nil, err
	}
	return cmd, exited, nil
}

// waitReady polls the server until it answers. It checks the reported
// process_id, not just that *something* answers, so that a port stolen by
// another Redis is detected instead of silently testing against it. The
// short backoff is only for process startup; it is not a test-time sleep.
func waitReady(addr string, pid int, exited <-chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	backoff := time.Millisecond
	for {
		select {
		case <-exited:
			return errors.New("process exited during startup")
		default:
		}
		info, err := probeInfo(addr)
		if err == nil {
			got, ok := infoField(info, "process_id")
			if ok && got == strconv.Itoa(pid) {
				return nil
			}
			// Someone else answers on our port; our process will fail to
			// bind and exit, but don't wait for that.
			return fmt.Errorf("port is served by another process (process_id %q, want %d)", got, pid)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", readyTimeout, err)
		}
		select {
		case <-exited:
			return errors.New("process exited during startup")
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 25*time.Millisecond)
	}
}

// probeInfo sends INFO server over a plain connection. The readiness probe
// speaks RESP by hand because a go-redis client retries and backs off on
// refused dials internally (and logs each failure), which would slow down
// and clutter every server start.
func probeInfo(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "$") {
		// e.g. "-LOADING ..." while a server is still starting.
		return "", fmt.Errorf("INFO reply %q", line)
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 {
		return "", fmt.Errorf("INFO reply %q", line)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf), nil
}

// adminClient is a small client for the helpers' own bookkeeping commands
// against running nodes. It never retries (callers poll) and skips optional
// handshake extras so failures show up as plain errors.
func adminClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     addr,
		Protocol:                 2,
		DialTimeout:              500 * time.Millisecond,
		ReadTimeout:              2 * time.Second,
		WriteTimeout:             2 * time.Second,
		MaxRetries:               -1,
		DialerRetries:            1,
		PoolSize:                 1,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// infoField extracts "key:value" from an INFO / CLUSTER INFO reply.
func infoField(info, key string) (string, bool) {
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && k == key {
			return v, true
		}
	}
	return "", false
}

// logTail returns the last n lines of the file at path, for error messages.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	return tail(string(b), n)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return out
}

// Ports handed out by this binary. The kernel may return a just-closed port
// again, so remembering them keeps two helpers (or a node and another node's
// bus port) from being given the same number before either has bound it.
var (
	portMu    sync.Mutex
	usedPorts = map[int]bool{}
)

// maxClusterPort keeps port+10000 (the cluster bus port) within range.
const maxClusterPort = 55000

// freePort finds a free loopback port by binding port 0 and closing the
// listener. With bus set, it also requires port+10000 to be free, as Redis
// Cluster nodes listen there too.
func freePort(bus bool) (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 200 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("probe free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		ok := !usedPorts[port]
		if ok && bus {
			ok = port < maxClusterPort && !usedPorts[port+10000] && portFree(port+10000)
		}
		_ = l.Close()
		if !ok {
			continue
		}
		usedPorts[port] = true
		if bus {
			usedPorts[port+10000] = true
		}
		return port, nil
	}
	return 0, errors.New("no free loopback port found")
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// Shared server state: one redis-server per test binary, started on first use.
var (
	sharedOnce sync.Once
	sharedSrv  *Server
	sharedErr  error
)

// Shared returns a client to a redis-server shared by every test in this test
// binary (started once, lazily), or to HEADGATE_TEST_REDIS ("host:port" or a
// redis:// URL) when that is set. Starting one server per binary instead of
// per test keeps the suite fast.
//
// Because the server is shared, tests must isolate themselves by key
// namespace (e.g. a prefix derived from t.Name()) and must never FLUSHALL or
// FLUSHDB; a test that needs a clean server should use Start.
//
// The same skip/fatal rule as Start applies when redis-server is missing.
// The returned client is closed via tb.Cleanup.
func Shared(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	if v := strings.TrimSpace(os.Getenv(EnvAddr)); v != "" {
		opts, err := externalOptions(v)
		if err != nil {
			tb.Fatalf("redistest: %s=%q: %v", EnvAddr, v, err)
		}
		c := redis.NewClient(opts)
		tb.Cleanup(func() { _ = c.Close() })
		// The variable was set on purpose, so an unreachable server is a
		// configuration error, not a reason to skip.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			tb.Fatalf("redistest: %s=%q is not reachable: %v", EnvAddr, v, err)
		}
		return c
	}

	bin := lookBinary(tb, "redis-server", EnvAddr)
	// No tb calls inside Do: Skip/Fatal would unwind through the Once.
	sharedOnce.Do(func() {
		sharedSrv, sharedErr = newServer(bin, nil)
	})
	if sharedErr != nil {
		tb.Fatalf("redistest: shared server: %v", sharedErr)
	}
	c := redis.NewClient(&redis.Options{Addr: sharedSrv.Addr()})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// externalOptions accepts either a bare "host:port" or a redis URL.
func externalOptions(v string) (*redis.Options, error) {
	if strings.Contains(v, "://") {
		return redis.ParseURL(v)
	}
	if _, _, err := net.SplitHostPort(v); err != nil {
		return nil, fmt.Errorf("want host:port or redis:// URL: %w", err)
	}
	return &redis.Options{Addr: v}, nil
}

// Main wraps testing.M: it runs the tests, then stops the shared server and
// any cluster started by SharedCluster and removes their temp dirs, then
// exits with the tests' status. Use it as
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
// Without it the shared processes still die with the binary (via the parent
// death signal on Linux), but their temp dirs are left behind until a later
// test run sweeps them.
func Main(m *testing.M) {
	code := m.Run()
	shutdownShared()
	os.Exit(code)
}

func shutdownShared() {
	// Running the Onces with no-ops both reads the results safely and stops
	// a test goroutine that outlived m.Run from starting a server now.
	sharedOnce.Do(func() {})
	if sharedSrv != nil {
		sharedSrv.Close()
	}
	sharedClusterOnce.Do(func() {})
	if sharedCl != nil {
		sharedCl.Close()
	}
}
