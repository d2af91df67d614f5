package dashboard

import (
	"context"
	"fmt"
	"time"

	"github.com/headgate/headgate"
)

// The overview's throughput chart: the last hour, a bar a minute, of the jobs the
// queues completed and the attempts that failed, from the series the worker's series
// duty records (headgate.Store.RecordSeries): one read per queue, no Lua, whatever the
// number of jobs.

// chartMinutes is the span of the throughput chart, a bar a minute.
const chartMinutes = 60

// Chart geometry (SVG user units).
const (
	chartWidth  = 720
	chartHeight = 120
	chartBar    = chartWidth / chartMinutes
)

// throughput is what the chart and the per-queue columns show of the last hour.
type throughput struct {
	// Completed and Failed are the last hour's totals; Rate is Failed's share of both
	// ("—" with neither).
	Completed, Failed int64
	Rate              string
	// Sampled is false when the series had no sample in the hour (no worker ran the
	// series duty): the zeros then say nothing, and the page shows "—", as headgate
	// stats shows "-". For the chart: no queue has a sample yet.
	Sampled bool
}

// minuteBar is one minute of the chart: its counts and where its rectangles go.
type minuteBar struct {
	Minute            time.Time // the minute's end
	Completed, Failed int64
	X, W              int
	DoneY, DoneH      int
	FailY, FailH      int
}

type throughputChart struct {
	throughput
	Bars []minuteBar
	// Peak is the largest minute (completed + failed), the chart's top.
	Peak          int64
	Width, Height int
}

// throughputOf reads the series of queues and sums their last hour at now: the chart of
// all of them and each queue's totals.
func (h *Handler) throughputOf(ctx context.Context, now time.Time, queues []string) (*throughputChart, map[string]throughput, error) {
	// A sample from before the hour is the base of the first minute's change.
	since := now.Add(-(chartMinutes + 2) * time.Minute)
	series, err := h.src.series.Series(ctx, since, queues...)
	if err != nil {
		return nil, nil, err
	}
	c := &throughputChart{Bars: make([]minuteBar, chartMinutes), Width: chartWidth, Height: chartHeight}
	for i := range c.Bars {
		c.Bars[i].Minute = now.Add(-time.Duration(chartMinutes-1-i) * time.Minute)
	}
	perQueue := map[string]throughput{}
	for q, samples := range series {
		c.Sampled = true
		var t throughput
		for i := range samples {
			age := now.Sub(samples[i].At)
			if age < 0 && samples[i].Live {
				age = 0 // the live counters, read after now: the current minute
			}
			if age < 0 || age >= chartMinutes*time.Minute {
				continue
			}
			t.Sampled = true
			if i == 0 {
				continue // the base of the next sample's change
			}
			done, failed := samples[i].Since(samples[i-1])
			b := &c.Bars[chartMinutes-1-int(age/time.Minute)]
			b.Completed += done
			b.Failed += failed
			t.Completed += done
			t.Failed += failed
		}
		t.Rate = failureRate(t.Completed, t.Failed)
		perQueue[q] = t
		c.Completed += t.Completed
		c.Failed += t.Failed
	}
	c.Rate = failureRate(c.Completed, c.Failed)
	for _, b := range c.Bars {
		c.Peak = max(c.Peak, b.Completed+b.Failed)
	}
	for i := range c.Bars {
		b := &c.Bars[i]
		b.X, b.W = i*chartBar, chartBar-1
		if c.Peak == 0 {
			continue
		}
		b.DoneH = int(b.Completed * chartHeight / c.Peak)
		b.FailH = int(b.Failed * chartHeight / c.Peak)
		b.DoneY = chartHeight - b.DoneH
		b.FailY = b.DoneY - b.FailH
	}
	return c, perQueue, nil
}

func failureRate(completed, failed int64) string {
	if completed+failed == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", float64(failed)*100/float64(completed+failed))
}

// seriesReader serves the throughput chart.
type seriesReader interface {
	Series(ctx context.Context, since time.Time, queues ...string) (map[string][]headgate.SeriesSample, error)
}
