package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// sliceArgs decodes from a msgpack array, the shape whose declared length the decoder
// allocates before reading an element.
type sliceArgs []int64

func (sliceArgs) Kind() string { return "slice" }

// TestHostilePayloadIsUndecodable: a payload whose header declares 2^32-1 elements in 5
// bytes would make the decoder allocate tens of GB and take every worker that admits it
// down; it is undecodable instead, and the handler never runs.
func TestHostilePayloadIsUndecodable(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[sliceArgs]) error {
			t.Errorf("handler called for job %q", job.ID)
			return nil
		})
		b.start()
		b.enqueueRaw(headgate.Envelope{ID: "huge", Kind: "slice", Payload: []byte{0xdd, 0xff, 0xff, 0xff, 0xff}}, nil)
		if a := b.waitAck("huge"); a.Outcome != headgate.OutcomeUndecodable || a.State != headgate.StateUndecodable {
			t.Errorf("ack = %+v, want undecodable", a)
		}
		if h := b.errorHistory("huge"); !strings.Contains(h, `decode args for kind "slice"`) {
			t.Errorf("history %q lacks the decode error", h)
		}
	})
}
