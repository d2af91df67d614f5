package headgate

import (
	"context"
	"fmt"
)

// PutPackage stores a package record and routes its own workflow type to it.
func (s *Store) PutPackage(ctx context.Context, rec PackageRecord) error {
	return s.PutPackageWithRoutes(ctx, rec, []string{rec.WorkflowType})
}

// PutPackageWithRoutes stores a package record and routes each of routeTypes to its
// content hash, in one script: readers see the record and its routes together.
func (s *Store) PutPackageWithRoutes(ctx context.Context, rec PackageRecord, routeTypes []string) error {
	if err := validatePackageKey(rec.WorkflowType, rec.ContentHash); err != nil {
		return err
	}
	if len(rec.Manifest) > MaxPayloadBytes {
		return invalid("Manifest", "is %d bytes, more than the %d byte limit", len(rec.Manifest), MaxPayloadBytes)
	}
	if len(routeTypes) > MaxAppendEvents {
		return invalid("routeTypes", "%d routes are more than %d", len(routeTypes), MaxAppendEvents)
	}
	deployed := int64(-1)
	if !rec.DeployedAt.IsZero() {
		if deployed = rec.DeployedAt.UnixMilli(); deployed < 0 {
			return invalid("DeployedAt", "is before 1970")
		}
	}
	args := []any{rec.WorkflowType, rec.ContentHash, deployed, rec.Manifest, len(routeTypes)}
	for i, t := range routeTypes {
		if err := validateRequired(fmt.Sprintf("routeTypes[%d]", i), t, true); err != nil {
			return err
		}
		args = append(args, t)
	}
	_, err := s.run(ctx, scriptWfPutPackage, rec.WorkflowType, args...)
	return err
}
