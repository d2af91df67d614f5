package headgate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestStorageFormat: a fresh namespace takes StorageFormat at the store's first call, and
// a namespace recorded in another format is refused with *FormatError naming both, before
// anything is written.
func TestStorageFormat(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		t.Run("fresh namespace gets the marker", func(t *testing.T) {
			ns := redistest.Namespace(t)
			s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Enqueue(ctx, headgate.Envelope{ID: "a", Kind: "k"}); err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
			got, err := rdb.Get(ctx, "hg:{"+ns+"}:format").Result()
			if err != nil || got != headgate.StorageFormat {
				t.Fatalf("format marker = %q, %v; want %q", got, err, headgate.StorageFormat)
			}
		})
		t.Run("other format refused", func(t *testing.T) {
			ns := redistest.Namespace(t)
			k := "hg:{" + ns + "}:format"
			if err := rdb.Set(ctx, k, "0", 0).Err(); err != nil {
				t.Fatal(err)
			}
			s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Enqueue(ctx, headgate.Envelope{ID: "a", Kind: "k"})
			var fe *headgate.FormatError
			if !errors.As(err, &fe) || fe.Found != "0" || fe.Want != headgate.StorageFormat || fe.Namespace != ns {
				t.Fatalf("Enqueue: %v, want *FormatError{Found 0, Want %s}", err, headgate.StorageFormat)
			}
			if _, err := s.GetJob(ctx, "a"); !errors.As(err, &fe) {
				t.Fatalf("GetJob: %v, want *FormatError", err)
			}
			n, err := rdb.Exists(ctx, "hg:{"+ns+"}:job:a").Result()
			if err != nil || n != 0 {
				t.Fatalf("job hash written under a refused format: exists=%d err=%v", n, err)
			}
		})
	})
}
