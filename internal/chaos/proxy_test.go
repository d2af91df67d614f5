package chaos

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// echoServer answers each line with the same line, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			})
		}
	})
	return ln.Addr().String()
}

func newTestProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := NewProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c)
}

// roundTrip sends line and reads the echo, within timeout.
func roundTrip(c net.Conn, r *bufio.Reader, line string, timeout time.Duration) (string, error) {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := r.ReadString('\n')
	return strings.TrimSuffix(got, "\n"), err
}

func TestProxyForwards(t *testing.T) {
	t.Parallel()
	p := newTestProxy(t)
	c, r := dial(t, p)
	for _, line := range []string{"PING", strings.Repeat("x", 100<<10)} {
		got, err := roundTrip(c, r, line, 5*time.Second)
		if err != nil || got != line {
			t.Fatalf("round trip of %d bytes: got %d bytes, %v", len(line), len(got), err)
		}
	}
}

func TestProxyDelay(t *testing.T) {
	t.Parallel()
	p := newTestProxy(t)
	c, r := dial(t, p)
	const delay = 100 * time.Millisecond
	p.SetFault(Fault{Delay: delay})
	start := time.Now()
	if got, err := roundTrip(c, r, "late", 5*time.Second); err != nil || got != "late" {
		t.Fatalf("got %q, %v", got, err)
	}
	// Delayed on the way there and on the way back.
	if d := time.Since(start); d < 2*delay {
		t.Errorf("round trip took %s, want at least %s", d, 2*delay)
	}
}

func TestProxyStallHoldsBytesUntilHealed(t *testing.T) {
	t.Parallel()
	p := newTestProxy(t)
	c, r := dial(t, p)
	p.SetFault(Fault{Stall: true})
	if _, err := roundTrip(c, r, "held", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("stalled round trip: want a timeout, got %v", err)
	}
	p.Heal()
	// The line sent during the stall arrives after it, whole and first.
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadString('\n')
	if err != nil || got != "held\n" {
		t.Fatalf("after heal: got %q, %v", got, err)
	}
	if got, err := roundTrip(c, r, "after", 5*time.Second); err != nil || got != "after" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestProxyResetAll(t *testing.T) {
	t.Parallel()
	p := newTestProxy(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := p.ResetAll(); n != 1 {
		t.Fatalf("ResetAll reset %d connections, want 1", n)
	}
	_, err := roundTrip(c, r, "after", 5*time.Second)
	if !isReset(err) {
		t.Fatalf("after reset: want connection reset or EOF, got %v", err)
	}
	// New connections go through.
	c2, r2 := dial(t, p)
	if got, err := roundTrip(c2, r2, "new", 5*time.Second); err != nil || got != "new" {
		t.Fatalf("new connection: got %q, %v", got, err)
	}
}

func TestProxyResetMidStream(t *testing.T) {
	t.Parallel()
	p := newTestProxy(t)
	c, r := dial(t, p)
	p.SetFault(Fault{ResetChance: 1})
	got, err := roundTrip(c, r, strings.Repeat("y", 1000), 5*time.Second)
	if !isReset(err) {
		t.Fatalf("want the connection cut, got %d bytes, %v", len(got), err)
	}
	if _, resets := p.Stats(); resets != 1 {
		t.Errorf("Stats: %d resets, want 1", resets)
	}
}

func TestProxyRefuse(t *testing.T) {
	t.Parallel()
	p := newTestProxy(t)
	p.SetFault(Fault{Refuse: true})
	// The reset may come before the dial returns, or on the first read.
	c, err := net.Dial("tcp", p.Addr())
	if err == nil {
		defer c.Close()
		_, err = roundTrip(c, bufio.NewReader(c), "no", 5*time.Second)
	}
	if !isReset(err) {
		t.Fatalf("refused connection: want reset or EOF, got %v", err)
	}
	p.Heal()
	c2, r2 := dial(t, p)
	if got, err := roundTrip(c2, r2, "yes", 5*time.Second); err != nil || got != "yes" {
		t.Fatalf("after heal: got %q, %v", got, err)
	}
}

func TestProxyCloseEndsStalledConnections(t *testing.T) {
	t.Parallel()
	p, err := NewProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, r := dial(t, p)
	p.SetFault(Fault{Stall: true})
	if _, err := roundTrip(c, r, "held", 50*time.Millisecond); !isTimeout(err) {
		t.Fatalf("want a timeout, got %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a stalled connection open")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE)
}
