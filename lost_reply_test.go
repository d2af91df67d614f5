package headgate_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// replyCutter sits between go-redis and Redis on every connection of a client (as its
// Dialer) and, once armed, lets the next script call that names a marker reach Redis and
// run, then breaks the connection before the reply gets back: the client sees EOF after
// it wrote the command, as when a connection drops mid-call, and go-redis sends the
// command again.
type replyCutter struct {
	mu     sync.Mutex
	marker []byte // armed: cut the reply of the next script call holding it
	cuts   atomic.Int32
}

func (rc *replyCutter) arm(marker string) {
	rc.mu.Lock()
	rc.marker = []byte(marker)
	rc.mu.Unlock()
}

func (rc *replyCutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: c, rc: rc}, nil
}

// cutConn is one connection through a replyCutter. go-redis writes a command in one
// Write and waits for its reply before the next, so the reply read after an armed
// command is that command's.
type cutConn struct {
	net.Conn
	rc  *replyCutter
	cut bool // the command written last is the armed one
}

func (c *cutConn) Write(b []byte) (int, error) {
	c.rc.mu.Lock()
	if m := c.rc.marker; m != nil && isScriptCall(b) && bytes.Contains(b, m) {
		c.cut, c.rc.marker = true, nil
	}
	c.rc.mu.Unlock()
	return c.Conn.Write(b)
}

// isScriptCall reports whether a written command is a script call Redis runs: FCALL on
// Redis 7, EVALSHA where the store runs EVAL.
func isScriptCall(b []byte) bool {
	b = bytes.ToLower(b)
	return bytes.Contains(b, []byte("fcall")) || bytes.Contains(b, []byte("evalsha"))
}

func (c *cutConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.cut && n > 0 {
		// Redis answered, so the script ran: the reply is dropped with the connection.
		c.rc.cuts.Add(1)
		_ = c.Conn.Close()
		return 0, io.EOF
	}
	return n, err
}

// cutClient is a client on the same Redis (or cluster) as rdb whose connections run
// through rc.
func cutClient(t *testing.T, rdb redis.UniversalClient, rc *replyCutter) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch r := rdb.(type) {
	case *redis.Client:
		c = redis.NewClient(&redis.Options{Addr: r.Options().Addr, Dialer: rc.dial})
	case *redis.ClusterClient:
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: r.Options().Addrs, Dialer: rc.dial})
	default:
		t.Fatalf("no cutting client for %T", rdb)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A store call Redis applied whose reply was lost is sent again by go-redis; the repeat
// reports what the first call did and does nothing more: a repeated admission returns
// the jobs the first one leased (which would otherwise expire unrun and be charged a
// crash) and leases no others, and a repeated ack succeeds.
func TestLostRepliesCostNothing(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		rc := &replyCutter{}
		s, err := headgate.NewStore(cutClient(t, rdb, rc), &headgate.StoreConfig{Namespace: redistest.Namespace(t)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		epoch := time.UnixMilli(1_700_000_000_000)
		if err := s.FreezeClock(ctx, epoch); err != nil {
			t.Fatal(err)
		}
		env := func(id string) headgate.Envelope {
			return headgate.Envelope{ID: id, Kind: "k", Payload: []byte("{}")}
		}
		admit := func(lease string, n int) []headgate.Claim {
			t.Helper()
			claims, err := s.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: lease, Queues: []string{headgate.QueueDefault},
				Capacity: n, Lease: time.Minute})
			if err != nil {
				t.Fatalf("admit %s: %v", lease, err)
			}
			return claims
		}
		// Load the scripts first, so that the calls cut below are FCALLs (EVALSHAs on miniredis) Redis runs.
		if _, err := s.Enqueue(ctx, env("warm")); err != nil {
			t.Fatal(err)
		}
		for _, c := range admit("warm-lease", 1) {
			if _, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeSuccess, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Enqueue(ctx, env("a"), env("b"), env("c"), env("d")); err != nil {
			t.Fatal(err)
		}

		rc.arm("lease-1")
		claims := admit("lease-1", 2)
		if rc.cuts.Load() != 1 {
			t.Fatalf("%d replies cut, want 1", rc.cuts.Load())
		}
		got := map[string]bool{}
		for _, c := range claims {
			got[c.Envelope.ID] = true
		}
		if len(claims) != 2 || !got["a"] || !got["b"] {
			t.Fatalf("the repeated admission returned %d claims %v, want a and b", len(claims), got)
		}

		// The first ack's reply is lost too: its repeat still reports success.
		rc.arm("success")
		if st, err := s.Ack(ctx, claims[0].LeaseRef(), headgate.OutcomeSuccess, nil); err != nil || st != headgate.StateDeleted {
			t.Errorf("repeated ack of %s: %s, %v; want deleted", claims[0].Envelope.ID, st, err)
		}
		rc.arm("retry")
		if st, err := s.Ack(ctx, claims[1].LeaseRef(), headgate.OutcomeRetry, &headgate.AckOpts{Delay: time.Hour}); err != nil || st != headgate.StateRetryable {
			t.Errorf("repeated ack of %s: %s, %v; want retryable", claims[1].Envelope.ID, st, err)
		}
		if n := rc.cuts.Load(); n != 3 {
			t.Errorf("%d replies cut, want 3", n)
		}

		// Nothing was lost: past every lease's expiry no lease is left to reclaim, the
		// retried job spent one attempt and no crash, and c and d were never leased.
		if err := s.AdvanceClock(ctx, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		if lost, err := s.ReclaimExpired(ctx, 10); err != nil || len(lost) != 0 {
			t.Errorf("reclaimed %v, %v; want no lost lease", lost, err)
		}
		if _, err := s.GetJob(ctx, claims[0].Envelope.ID); !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("get %s after its success: %v, want not found", claims[0].Envelope.ID, err)
		}
		if j, err := s.GetJob(ctx, claims[1].Envelope.ID); err != nil || j.State != headgate.StateRetryable || j.Attempt != 1 || j.CrashAttempt != 0 {
			t.Errorf("%s after its retry: %+v, %v; want retryable at attempt 1, crash 0", claims[1].Envelope.ID, j, err)
		}
		for _, id := range []string{"c", "d"} {
			if j, err := s.GetJob(ctx, id); err != nil || j.State != headgate.StateAvailable || j.CrashAttempt != 0 {
				t.Errorf("%s: %+v, %v; want available, never leased", id, j, err)
			}
		}
	})
}
