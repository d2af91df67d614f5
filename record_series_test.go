package headgate

import "testing"

// Since is the growth of each counter between two samples; one that went down was reset
// and counts from zero.
func TestSeriesSampleSince(t *testing.T) {
	t.Parallel()
	prev := SeriesSample{Completed: 10, Failed: 4}
	for _, c := range []struct {
		s                 SeriesSample
		completed, failed int64
	}{
		{SeriesSample{Completed: 15, Failed: 4}, 5, 0},
		{SeriesSample{Completed: 3, Failed: 6}, 3, 2},  // completed reset
		{SeriesSample{Completed: 10, Failed: 1}, 0, 1}, // failed reset
	} {
		if done, failed := c.s.Since(prev); done != c.completed || failed != c.failed {
			t.Errorf("%+v.Since(%+v) = %d, %d; want %d, %d", c.s, prev, done, failed, c.completed, c.failed)
		}
	}
}
