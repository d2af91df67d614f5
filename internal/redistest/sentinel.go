package redistest

import (
	"context"
	"errors"
	"fmt"
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
)

// SentinelMaster is the master name the sentinel of StartSentinel monitors.
const SentinelMaster = "hgmaster"

// Sentinel is a replicated Redis watched by one redis-sentinel, all private to a test:
// a master, one replica and the sentinel, each on a free loopback port.
type Sentinel struct {
	servers []*Server // master and replica, in start order
	dir     string    // the sentinel's directory: config (rewritten by it) and log

	mu     sync.Mutex
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartSentinel starts a master, a replica of it and a redis-sentinel monitoring it under
// SentinelMaster with a quorum of one, and returns once the sentinel knows the replica (a
// failover needs one). Everything is stopped by tb.Cleanup.
//
// Without redis-sentinel on PATH (Debian: package redis-sentinel) the test is skipped
// loudly, or fails when HEADGATE_REQUIRE_REDIS=1.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	sentinelBin := lookBinary(tb, "redis-sentinel", EnvAddr)
	master := Start(tb)
	replica := StartWith(tb, "--replicaof", "127.0.0.1", strconv.Itoa(master.port))
	dir := tb.TempDir()
	s := &Sentinel{servers: []*Server{master, replica}, dir: dir}
	if err := s.start(sentinelBin, master.port); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(s.stop)
	if err := waitFor(readyTimeout, func() error { return s.replicaKnown(replica.Addr()) }); err != nil {
		tb.Fatalf("redistest: sentinel never saw the replica: %v\n--- sentinel log ---\n%s", err, logTail(filepath.Join(dir, logName), 20))
	}
	return s
}

func (s *Sentinel) start(bin string, masterPort int) error {
	var errs []error
	for range startAttempts {
		port, err := freePort(false)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// Short timeouts: a failover in a test should take about a second, not the
		// production default of half a minute.
		conf := strings.Join([]string{
			"port " + strconv.Itoa(port),
			"bind 127.0.0.1",
			"protected-mode no",
			"daemonize no",
			"dir " + s.dir,
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1", SentinelMaster, masterPort),
			"sentinel down-after-milliseconds " + SentinelMaster + " 1000",
			"sentinel failover-timeout " + SentinelMaster + " 5000",
			"sentinel parallel-syncs " + SentinelMaster + " 1",
			"",
		}, "\n")
		confPath := filepath.Join(s.dir, "sentinel.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
			return err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cmd, exited, err := spawn(s.dir, bin, []string{confPath}, addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("redis-sentinel on %s: %w", addr, err))
			continue
		}
		s.mu.Lock()
		s.port, s.cmd, s.exited = port, cmd, exited
		s.mu.Unlock()
		return nil
	}
	return fmt.Errorf("could not start redis-sentinel: %w\n--- log ---\n%s", errors.Join(errs...), logTail(filepath.Join(s.dir, logName), 20))
}

func (s *Sentinel) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
		s.cmd = nil
	}
}

// Addr returns the sentinel's address.
func (s *Sentinel) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Servers returns the master and the replica in the order they were started (the first
// is the master until a failover).
func (s *Sentinel) Servers() []*Server { return s.servers }

// Client returns a Sentinel-backed client of SentinelMaster (go-redis's failover
// client), closed via tb.Cleanup.
func (s *Sentinel) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewFailoverClient(s.FailoverOptions())
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// FailoverOptions are the options of a client of SentinelMaster through this sentinel.
func (s *Sentinel) FailoverOptions() *redis.FailoverOptions {
	return &redis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: []string{s.Addr()}}
}

func (s *Sentinel) admin() *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), Protocol: 2, MaxRetries: -1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, DisableIdentity: true})
}

// MasterAddr returns the master's address as the sentinel reports it.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	sc := s.admin()
	defer sc.Close()
	hp, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("get-master-addr-by-name: %v", hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// replicaKnown reports nil once the sentinel lists addr as a healthy replica.
func (s *Sentinel) replicaKnown(addr string) error {
	sc := s.admin()
	defer sc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	reps, err := sc.Replicas(ctx, SentinelMaster).Result()
	if err != nil {
		return err
	}
	for _, r := range reps {
		if net.JoinHostPort(r["ip"], r["port"]) == addr && !strings.Contains(r["flags"], "down") &&
			r["master-link-status"] == "ok" {
			return nil
		}
	}
	return fmt.Errorf("replica %s not listed healthy: %v", addr, reps)
}

// Failover makes the sentinel promote the replica (SENTINEL FAILOVER) and returns the new
// master's address once the sentinel reports it and the new master has taken the role.
// The old master is still a master then: the sentinel turns it into the new master's
// replica only when it next polls it, about ten seconds later (as in production), and a
// client still writing to it meanwhile writes into a data set that will be discarded. A
// Failover soon after another waits for that, since the sentinel needs a healthy replica
// to promote.
func (s *Sentinel) Failover(ctx context.Context) (string, error) {
	old, err := s.MasterAddr(ctx)
	if err != nil {
		return "", err
	}
	sc := s.admin()
	defer sc.Close()
	// -NOGOODSLAVE until the sentinel has polled a replica it can promote (after an
	// earlier failover, until it has turned the old master into a replica); -INPROG
	// while a failover is still going on.
	err = waitFor(60*time.Second, func() error { return sc.Failover(ctx, SentinelMaster).Err() })
	if err != nil {
		return "", fmt.Errorf("SENTINEL FAILOVER: %w", err)
	}
	var newMaster string
	err = waitFor(30*time.Second, func() error {
		addr, err := s.MasterAddr(ctx)
		if err != nil {
			return err
		}
		if addr == old {
			return errors.New("the sentinel still reports the old master")
		}
		newMaster = addr
		return roleIs(ctx, addr, "master")
	})
	if err != nil {
		return "", fmt.Errorf("failover from %s: %w\n--- sentinel log ---\n%s", old, err, logTail(filepath.Join(s.dir, logName), 20))
	}
	return newMaster, nil
}

func roleIs(ctx context.Context, addr, role string) error {
	c := adminClient(addr)
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if got, _ := infoField(info, "role"); strings.TrimSpace(got) != role {
		return fmt.Errorf("%s has role %q, want %q", addr, got, role)
	}
	return nil
}
