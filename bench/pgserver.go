package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgServer is the harness's private PostgreSQL cluster for River: a fresh
// initdb in a temporary directory, one postgres process listening on a free
// loopback port, both removed at the end. Durability is PostgreSQL's default
// and is set explicitly anyway: fsync on, synchronous_commit on, so every
// committed transaction is on disk before the client hears of it.
//
// postgres runs as the harness's child (not daemonised through pg_ctl), so
// its pid is the one the harness started and stops, and the kernel stops it
// too if the harness dies without cleaning up (childProcAttr). Only the
// temporary directory is then left behind.
//
// initdb and postgres refuse to run as root. As root, the harness runs both
// as the "postgres" user (Debian's package creates it) in a directory that
// user owns.
type pgServer struct {
	DSN     string // superuser "postgres", database "postgres", trust auth, loopback only
	Version string // server_version
	dir     string
	cmd     *exec.Cmd
	log     *tail
	exit    chan error
}

// pgBinDir is set by -pg-bin; "" means look for it (findPostgres).
var pgBinDir string

// findPostgres returns the directory holding initdb and postgres: -pg-bin,
// else Debian's /usr/lib/postgresql/<newest>/bin, else the PATH.
func findPostgres() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if pgBinDir != "" {
		if !has(pgBinDir) {
			return "", fmt.Errorf("no initdb and postgres in -pg-bin %s", pgBinDir)
		}
		return pgBinDir, nil
	}
	// Debian installs server binaries off the PATH, one directory per major version.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		return pgMajor(b) - pgMajor(a)
	})
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL not found: install the postgresql package or pass -pg-bin DIR")
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// pgCredential is who runs initdb and postgres: the harness's own user, or
// "postgres" when the harness is root.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses root: no postgres user to run it as (%w)", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("postgres user: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func startPostgres(ctx context.Context) (*pgServer, error) {
	bin, err := findPostgres()
	if err != nil {
		return nil, err
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bench-pg-")
	if err != nil {
		return nil, err
	}
	s := &pgServer{dir: dir, log: &tail{max: 8 << 10}}
	if cred != nil {
		// MkdirTemp makes it 0700: readable by its owner only, as postgres wants.
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			s.remove()
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	// --no-sync only skips initdb's own final fsync of the new cluster; the
	// server below runs with fsync and synchronous_commit on.
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = withCredential(childProcAttr(), cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		s.remove()
		return nil, fmt.Errorf("initdb: %w:%s", err, lastLines(string(out), 5))
	}
	var lastErr error
	// Same free-port race as redisserver.go: retry a couple of times.
	for range 3 {
		if lastErr = s.tryStart(ctx, bin, data, cred); lastErr == nil {
			return s, nil
		}
	}
	s.remove()
	return nil, lastErr
}

func (s *pgServer) tryStart(ctx context.Context, bin, data string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", data,
		"-p", strconv.Itoa(port),
		"-k", s.dir, // Unix socket in our directory, not /var/run/postgresql
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=on",
		"-c", "synchronous_commit=on",
		"-c", "full_page_writes=on",
		"-c", "logging_collector=off",
	)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = withCredential(childProcAttr(), cred)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.cmd, s.exit = cmd, make(chan error, 1)
	go func() { s.exit <- cmd.Wait() }()
	s.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)

	deadline := time.Now().Add(30 * time.Second)
	for {
		// A plain dial first, then a real connection: during start-up the
		// port accepts and answers "the database system is starting up".
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond); err == nil {
			c.Close()
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			conn, err := pgx.Connect(cctx, s.DSN)
			if err == nil {
				err = conn.QueryRow(cctx, "SHOW server_version").Scan(&s.Version)
				conn.Close(cctx)
			}
			cancel()
			if err == nil {
				return nil
			}
		}
		select {
		case werr := <-s.exit:
			s.cmd = nil
			return fmt.Errorf("postgres exited at start (%v):%s", werr, lastLines(s.log.String(), 5))
		case <-ctx.Done():
			s.stopProcess()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stopProcess()
			return fmt.Errorf("postgres did not accept connections within 30s:%s", lastLines(s.log.String(), 5))
		}
	}
}

// Stop shuts the server down and removes its directory.
func (s *pgServer) Stop() {
	s.stopProcess()
	s.remove()
}

// stopProcess signals only the postmaster the harness started: SIGINT is
// PostgreSQL's fast shutdown (disconnect clients, checkpoint, exit), which
// also ends every backend it forked.
func (s *pgServer) stopProcess() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exit:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exit
	}
	s.cmd = nil
}

func (s *pgServer) remove() {
	if s.dir != "" && strings.HasPrefix(filepath.Base(s.dir), "bench-pg-") {
		_ = os.RemoveAll(s.dir)
	}
}

func withCredential(a *syscall.SysProcAttr, cred *syscall.Credential) *syscall.SysProcAttr {
	if cred == nil {
		return a
	}
	if a == nil {
		a = &syscall.SysProcAttr{}
	}
	a.Credential = cred
	return a
}
