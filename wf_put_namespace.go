package headgate

import (
	"context"
	"encoding/json"
)

// Put writes a whole namespace record when its name is absent (MintCreated; a zero
// CreatedAt is now, a zero LastSeen is CreatedAt). On a name registered already it is
// idempotent: the stored record stays and only its LastSeen is bumped
// (MintAlreadyExisted).
func (r *Registry) Put(ctx context.Context, rec NamespaceRecord) (MintOutcome, error) {
	if err := validateRequired("record.Name", rec.Name, true); err != nil {
		return "", err
	}
	if err := validateOrigin(rec.Origin); err != nil {
		return "", err
	}
	if rec.State == "" {
		rec.State = NamespaceActive
	}
	if rec.State != NamespaceActive && rec.State != NamespaceDeprecated {
		return "", invalid("record.State", "%q is not a namespace state", rec.State)
	}
	if rec.Placement.Mode == "" {
		rec.Placement.Mode = PlacementUnplaced
	}
	if err := validatePlacement(rec.Placement); err != nil {
		return "", err
	}
	placement, err := json.Marshal(rec.Placement)
	if err != nil {
		return "", err
	}
	config, err := json.Marshal(rec.Config)
	if err != nil {
		return "", err
	}
	created, seen := int64(-1), int64(-1)
	if !rec.CreatedAt.IsZero() {
		if created = rec.CreatedAt.UnixMilli(); created < 0 {
			return "", invalid("record.CreatedAt", "is before 1970")
		}
	}
	if !rec.LastSeen.IsZero() {
		if seen = rec.LastSeen.UnixMilli(); seen < 0 {
			return "", invalid("record.LastSeen", "is before 1970")
		}
	}
	reply, err := r.run(ctx, scriptWfPutNamespace, rec.Name, rec.Name, string(rec.Origin), string(rec.State),
		placement, config, created, seen)
	if err != nil {
		return "", err
	}
	return MintOutcome(asString(reply, 0)), nil
}
