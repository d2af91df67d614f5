package headgate

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// frozenEpoch is where frozenStore freezes the store clock.
var frozenEpoch = time.UnixMilli(1_750_000_000_000)

// frozenStore returns a Store of a fresh namespace on rdb with its clock frozen at
// frozenEpoch, and must, which fails the test on an error.
func frozenStore(t *testing.T, rdb redis.UniversalClient) (*Store, func(error)) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := NewStore(rdb, &StoreConfig{Namespace: redistest.Namespace(t)})
	must(err)
	must(s.FreezeClock(context.Background(), frozenEpoch))
	return s, must
}
