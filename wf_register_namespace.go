package headgate

import (
	"context"
	"encoding/json"
)

// Register registers a namespace when it is absent (MintCreated: active, unplaced,
// created now); when it is registered already only its LastSeen is bumped
// (MintAlreadyExisted), and its origin is never overwritten.
func (r *Registry) Register(ctx context.Context, name string, origin NamespaceOrigin) (MintOutcome, error) {
	if err := validateRequired("name", name, true); err != nil {
		return "", err
	}
	if err := validateOrigin(origin); err != nil {
		return "", err
	}
	placement, err := json.Marshal(NamespacePlacement{Mode: PlacementUnplaced})
	if err != nil {
		return "", err
	}
	reply, err := r.run(ctx, scriptWfRegisterNamespace, name, name, string(origin), placement, "{}")
	if err != nil {
		return "", err
	}
	return MintOutcome(asString(reply, 0)), nil
}
