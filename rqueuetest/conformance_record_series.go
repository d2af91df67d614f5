package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// recordSeriesCases cover the outcome counters acks keep and RecordSeries, which
// snapshots them into each queue's throughput series.
var recordSeriesCases = []conformanceCase{
	{"RecordSeries/SnapshotsOutcomeCounters", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		start, err := s.Now(ctx)
		if err != nil {
			t.Fatal(err)
		}
		jobs := []headgate.Envelope{job("a"), job("b"), job("c"), job("d"), job("e"), job("x")}
		jobs[0].Retention = 0 // deleted at its success, counted all the same
		jobs[5].Queue = "other"
		mustEnqueue(t, ctx, s, jobs...)
		// Two successes, a retry, a skip (no failure), an undecodable payload; one batch.
		claims := mustAdmit(t, ctx, s, admitReq("w", 5))
		var acks []headgate.AckRequest
		for i, o := range []headgate.Outcome{headgate.OutcomeSuccess, headgate.OutcomeSuccess, headgate.OutcomeRetry,
			headgate.OutcomeSkip, headgate.OutcomeUndecodable} {
			acks = append(acks, headgate.AckRequest{Lease: claims[i].LeaseRef(), Outcome: o})
		}
		if _, err := s.AckMany(ctx, acks); err != nil {
			t.Fatal(err)
		}
		g, err := s.Gauges(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if g.Events.Completed["default"] != 2 || g.Events.Failed["default"] != 2 || len(g.Events.Completed) != 1 || len(g.Events.Failed) != 1 {
			t.Errorf("counters: completed %v, failed %v; want default 2 and 2", g.Events.Completed, g.Events.Failed)
		}
		record := func(want int) {
			t.Helper()
			if n, err := s.RecordSeries(ctx, 0); err != nil || n != want {
				t.Errorf("RecordSeries = %d, %v; want %d queues sampled", n, err, want)
			}
		}
		record(2)
		record(0) // within the gap: nothing
		advance(t, ctx, s, headgate.SeriesGapDefault)
		// The retried job fails again once it is due.
		advance(t, ctx, s, time.Hour)
		mustPromote(t, ctx, s)
		mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeRetry, nil)
		record(2)
		series, err := s.Series(ctx, start, "default", "other", "none")
		if err != nil {
			t.Fatal(err)
		}
		t0, t1 := start, start.Add(headgate.SeriesGapDefault+time.Hour)
		want := map[string][]headgate.SeriesSample{
			"default": {{At: t0, Completed: 2, Failed: 2}, {At: t1, Completed: 2, Failed: 3}},
			"other":   {{At: t0}, {At: t1}},
		}
		for q, w := range want {
			got := series[q]
			if len(got) != len(w) {
				t.Errorf("series of %s = %+v, want %+v", q, got, w)
				continue
			}
			for i := range w {
				if !got[i].At.Equal(w[i].At) || got[i].Completed != w[i].Completed || got[i].Failed != w[i].Failed {
					t.Errorf("series of %s[%d] = %+v, want %+v", q, i, got[i], w[i])
				}
			}
		}
		if _, ok := series["none"]; ok || len(series) != 2 {
			t.Errorf("series = %v, want default and other only", series)
		}
		// Since a later time: the later sample only.
		if later, err := s.Series(ctx, t1, "default"); err != nil || len(later["default"]) != 1 {
			t.Errorf("Series since the second sample = %v, %v; want one sample", later, err)
		}
	}},
	{"RecordSeries/KeepsTheNewest", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		first, err := s.Now(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for range headgate.SeriesKeep + 3 {
			if n, err := s.RecordSeries(ctx, time.Second); err != nil || n != 1 {
				t.Fatalf("RecordSeries = %d, %v", n, err)
			}
			advance(t, ctx, s, time.Second)
		}
		series, err := s.Series(ctx, first, "default")
		if err != nil {
			t.Fatal(err)
		}
		got := series["default"]
		if n := len(got); n > 0 && got[n-1].Live { // the counters now, not a recorded sample
			got = got[:n-1]
		}
		if len(got) != headgate.SeriesKeep || !got[0].At.Equal(first.Add(3*time.Second)) {
			t.Errorf("kept %d samples from %v, want %d from %v", len(got), got[0].At, headgate.SeriesKeep, first.Add(3*time.Second))
		}
	}},
	{"RecordSeries/CorruptRefusedWhole", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"), headgate.Envelope{ID: "b", Kind: "test", Queue: "z"})
		mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeSuccess, nil)
		// "default" sorts first: its series is written before z's would be refused.
		if err := s.Client().Set(ctx, nsKey(s, "q:z:series"), "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		err := unchanged(t, ctx, s, "RecordSeries with a corrupt series", func() error {
			_, err := s.RecordSeries(ctx, 0)
			return err
		})
		wantErr[*headgate.CorruptError](t, err)
		if _, err := s.RecordSeries(ctx, -time.Second); err == nil {
			t.Errorf("RecordSeries with a negative gap: no error")
		}
	}},
}
