package redistest

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// StartWith is Start with extra redis-server flags, given as on the command line
// ("--appendonly", "yes"). They come after the defaults, so they override them: a server
// started with "--appendonly", "yes" keeps its data set across Restart, which reloads the
// append-only file from the server's directory.
func StartWith(tb testing.TB, flags ...string) *Server {
	tb.Helper()
	bin := lookBinary(tb, "redis-server", EnvAddr)
	s, err := newServer(bin, flags)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Pid returns the process id of the running server, 0 when it is stopped.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Signal sends sig to the running server, e.g. SIGSTOP and SIGCONT to freeze it without
// closing its connections. Use Stop to kill it: Stop also reaps the process.
func (s *Server) Signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redistest: Signal on a stopped server")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("redistest: signal %v to redis-server on %s: %w", sig, s.addrLocked(), err)
	}
	return nil
}
