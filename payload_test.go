package headgate

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// A payload reaches every reader whole at every size around the piece boundaries, through
// enqueue, admit, listing and an edit that shortens or lengthens it; a small job's hash
// keeps Redis's listpack encoding (the reason payloads are stored in pieces).
func TestPayloadPieces(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		ns := redistest.Namespace(t)
		s, err := NewStore(rdb, &StoreConfig{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		payload := func(n int) []byte {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte('a' + i%26)
			}
			return p
		}
		sizes := []int{0, 1, 64, 65, 105, 128, 129, 1023, 1024, 1025, 5000}
		var envs []Envelope
		for _, n := range sizes {
			envs = append(envs, Envelope{ID: fmt.Sprintf("j%d", n), Kind: "k", Payload: payload(n)})
		}
		if _, err := s.Enqueue(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		for _, n := range sizes {
			j, err := s.GetJob(ctx, fmt.Sprintf("j%d", n))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(j.Payload, payload(n)) {
				t.Errorf("GetJob j%d: payload of %d bytes, want %d", n, len(j.Payload), n)
			}
		}
		if rdb, ok := rdb.(*redis.Client); ok && !strings.Contains(t.Name(), "miniredis") { // miniredis has no OBJECT ENCODING
			enc, err := rdb.ObjectEncoding(ctx, "hg:{"+ns+"}:job:j105").Result()
			if err != nil {
				t.Fatal(err)
			}
			if enc != "listpack" && enc != "ziplist" {
				t.Errorf("job hash with a 105-byte payload is %s, want listpack", enc)
			}
		}
		// Edits: long to short drops the old pieces, short to long writes new ones.
		edits := []struct {
			id string
			n  int
		}{{"j1025", 70}, {"j1025", 0}, {"j0", 1000}, {"j105", 5000}, {"j5000", 200}}
		for _, c := range edits {
			id, p := c.id, payload(c.n)
			if _, err := s.Edit(ctx, id, JobEdit{Payload: &p}); err != nil {
				t.Fatal(err)
			}
			j, err := s.GetJob(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(j.Payload, p) {
				t.Errorf("after edit of %s to %d bytes: payload of %d bytes", id, c.n, len(j.Payload))
			}
		}
		claims, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{QueueDefault}, Capacity: len(sizes), Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"j0": 1000, "j105": 5000, "j5000": 200, "j1025": 0}
		for _, n := range sizes {
			if _, ok := want[fmt.Sprintf("j%d", n)]; !ok {
				want[fmt.Sprintf("j%d", n)] = n
			}
		}
		if len(claims) != len(sizes) {
			t.Fatalf("admitted %d jobs, want %d", len(claims), len(sizes))
		}
		for _, c := range claims {
			if n := want[c.Envelope.ID]; !bytes.Equal(c.Envelope.Payload, payload(n)) {
				t.Errorf("admitted %s: payload of %d bytes, want %d", c.Envelope.ID, len(c.Envelope.Payload), n)
			}
		}
	})
}
