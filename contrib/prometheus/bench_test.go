package headgateprom_test

import (
	"context"
	"testing"
	"time"

	"github.com/headgate/headgate"
	headgateprom "github.com/headgate/headgate/contrib/prometheus"
	"github.com/headgate/headgate/worker"
)

// BenchmarkWorkerMiddleware is the CPU one attempt pays for the instruments: the
// middleware around a no-op handler, against the handler alone.
func BenchmarkWorkerMiddleware(b *testing.B) {
	noop := func(context.Context, *headgate.Claim) error { return nil }
	m := headgateprom.NewMetrics(nil)
	claim := &headgate.Claim{Envelope: headgate.Envelope{ID: "j", Kind: "noop", Queue: "default",
		ScheduledAt: time.UnixMilli(1000)}, ExpiresAt: time.UnixMilli(31000)}
	ctx := context.Background()
	for name, h := range map[string]worker.HandlerFunc{"plain": noop, "metrics": m.WorkerMiddleware(0)(noop)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = h(ctx, claim)
			}
		})
	}
}
