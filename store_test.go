package headgate_test

import (
	"errors"
	"testing"

	"github.com/headgate/headgate"
)

// A nil client is refused when the store (or the registry) is made, with an error
// naming it, not by a nil-pointer panic at the first call.
func TestNewStoreNilClient(t *testing.T) {
	t.Parallel()
	var inv *headgate.InvalidError
	if _, err := headgate.NewStore(nil, &headgate.StoreConfig{Namespace: "billing"}); !errors.As(err, &inv) || inv.Field != "rdb" {
		t.Errorf("NewStore(nil) = %v, want *InvalidError for rdb", err)
	}
	if _, err := headgate.NewRegistry(nil, &headgate.RegistryConfig{Scope: "global"}); !errors.As(err, &inv) || inv.Field != "rdb" {
		t.Errorf("NewRegistry(nil) = %v, want *InvalidError for rdb", err)
	}
}
