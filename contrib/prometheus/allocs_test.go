package headgateprom_test

import (
	"context"
	"testing"
	"time"

	"github.com/headgate/headgate"
	headgateprom "github.com/headgate/headgate/contrib/prometheus"
)

// A successful attempt's measurements allocate nothing: its series are looked up once
// per queue and kind, and its outcome's counter once per outcome.
func TestWorkerMiddlewareAllocs(t *testing.T) {
	m := headgateprom.NewMetrics(nil)
	h := m.WorkerMiddleware(0)(func(context.Context, *headgate.Claim) error { return nil })
	claim := &headgate.Claim{Envelope: headgate.Envelope{ID: "j", Kind: "noop", Queue: "default",
		ScheduledAt: time.UnixMilli(1000)}, ExpiresAt: time.UnixMilli(31000)}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { _ = h(ctx, claim) }); n != 0 {
		t.Errorf("a successful attempt's measurements: %.0f allocations, want 0", n)
	}
}
