package headgate

import (
	"context"
	"encoding/json"
)

// SetPlacement sets a registered namespace's placement (and bumps its LastSeen), leaving
// every other field as it is; re-applying the same placement succeeds. It reports false,
// and writes nothing, when the name is not registered: placement never mints.
func (r *Registry) SetPlacement(ctx context.Context, name string, p NamespacePlacement) (bool, error) {
	if err := validateRequired("name", name, true); err != nil {
		return false, err
	}
	if err := validatePlacement(p); err != nil {
		return false, err
	}
	placement, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	reply, err := r.run(ctx, scriptWfSetNamespacePlacement, name, name, placement)
	if err != nil {
		return false, err
	}
	return asInt(reply, 0) == 1, nil
}
