package headgateprom_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	headgateprom "github.com/headgate/headgate/contrib/prometheus"
	"github.com/headgate/headgate/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// commandStats returns the calls of each command a redis-server counted.
func commandStats(t *testing.T, rdb *redis.Client) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	mustOK(t, err)
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		mustOK(t, err)
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

// handshake are the commands of INFO itself and of a new connection's setup, which a
// scrape may or may not pay depending on the client's pool.
var handshake = map[string]bool{"info": true, "hello": true, "client|setinfo": true, "client": true}

// On a private redis-server, INFO commandstats shows what a scrape costs Redis: the same
// plain reads at 40 and at 20,040 jobs, and no script.
func TestCollectorScrapeCommandStats(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	s := newStore(t, rdb, "stats")
	c, err := headgateprom.NewCollector(rdb, &headgateprom.CollectorConfig{Namespace: "stats", RateClasses: []string{"api"}})
	mustOK(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	enqueue := func(n int) {
		for off := 0; off < n; off += headgate.MaxBatch {
			envs := make([]headgate.Envelope, min(n-off, headgate.MaxBatch))
			for i := range envs {
				envs[i] = headgate.Envelope{ID: fmt.Sprintf("j%d-%d", n, off+i), Kind: "k", Queue: []string{"a", "b"}[i%2],
					PartitionKey: fmt.Sprintf("t%d", (off+i)%40)}
			}
			_, err := s.Enqueue(context.Background(), envs...)
			mustOK(t, err)
		}
	}
	scrape := func() map[string]int64 {
		before := commandStats(t, rdb)
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("Gather: %v", err)
		}
		after := commandStats(t, rdb)
		delta := map[string]int64{}
		for name, n := range after {
			if d := n - before[name]; d > 0 && !handshake[name] {
				delta[name] = d
			}
		}
		return delta
	}
	enqueue(40) // 20 partitions per queue, more than the 10 read
	scrape()    // the collector's first scrape also reads the namespace's storage format, once
	small := scrape()
	enqueue(20_000)
	large := scrape()
	if fmt.Sprint(small) != fmt.Sprint(large) {
		t.Errorf("scrape at 40 jobs: %v; at 20,040 jobs: %v; want the same commands", small, large)
	}
	want := "map[get:2 hgetall:4 hlen:1 hmget:1 smembers:2 time:1 zcard:2 zcount:2 zrange:22]" // 2 queues, 1 rate class, 10 partitions each
	if got := fmt.Sprint(large); got != want {
		t.Errorf("scrape commands %s, want %s", got, want)
	}
	t.Logf("commands per scrape (INFO commandstats): %v at 40 jobs, %v at 20,040 jobs", small, large)
}
