package headgate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// PackageRecord is one deployed version of a workflow type's code: runs record the
// content hash they started on and stay on it.
type PackageRecord struct {
	WorkflowType string
	ContentHash  string
	// DeployedAt orders the listing (ms precision); zero records the store time.
	DeployedAt time.Time
	// Manifest is the deployer's own description of the package, kept as given.
	Manifest []byte
}

// PackageRoute says which content hash new runs of a workflow type start on.
type PackageRoute struct {
	WorkflowType string
	ContentHash  string
}

func validatePackageKey(typ, hash string) error {
	if err := validateRequired("WorkflowType", typ, true); err != nil {
		return err
	}
	return validateRequired("ContentHash", hash, true)
}

// ListPackages returns a page of the package records ordered by DeployedAt, then
// workflow type, then content hash, and the cursor of the next page ("" at the end).
func (s *Store) ListPackages(ctx context.Context, cursor string, limit int) ([]PackageRecord, string, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, "", err
	}
	members, next, err := s.lexPage(ctx, s.keys.PackageIndex(), "-", "+", cursor, limit)
	if err != nil || len(members) == 0 {
		return nil, next, err
	}
	fields := make([]string, len(members))
	for i, m := range members {
		fields[i] = idOfMember(m)
	}
	v, err := s.rdb.HMGet(ctx, s.keys.Packages(), fields...).Result()
	if err != nil {
		return nil, "", err
	}
	out := make([]PackageRecord, 0, len(v))
	for i, x := range v {
		stored, ok := x.(string)
		if !ok {
			continue // deleted since the index was read
		}
		at, manifest, _ := strings.Cut(stored, "\n")
		ms, err := strconv.ParseInt(at, 10, 64)
		if err != nil {
			return nil, "", fmt.Errorf("headgate: package %q is malformed", fields[i])
		}
		typ, hash, _ := strings.Cut(fields[i], memberSep)
		rec := PackageRecord{WorkflowType: typ, ContentHash: hash, DeployedAt: time.UnixMilli(ms)}
		if manifest != "" {
			rec.Manifest = []byte(manifest)
		}
		out = append(out, rec)
	}
	return out, next, nil
}

// PackageRouteOf returns the content hash new runs of a workflow type start on, or ""
// when the type has no route.
func (s *Store) PackageRouteOf(ctx context.Context, workflowType string) (string, error) {
	if err := s.checkFormat(ctx); err != nil {
		return "", err
	}
	h, err := s.rdb.HGet(ctx, s.keys.PackageRoutes(), workflowType).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return h, err
}

// ListPackageRoutes returns a page of the routes in workflow type order, and the cursor
// of the next page ("" at the end).
func (s *Store) ListPackageRoutes(ctx context.Context, cursor string, limit int) ([]PackageRoute, string, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, "", err
	}
	types, next, err := s.lexPage(ctx, s.keys.PackageRouteIndex(), "-", "+", cursor, limit)
	if err != nil || len(types) == 0 {
		return nil, next, err
	}
	v, err := s.rdb.HMGet(ctx, s.keys.PackageRoutes(), types...).Result()
	if err != nil {
		return nil, "", err
	}
	out := make([]PackageRoute, 0, len(v))
	for i, x := range v {
		if hash, ok := x.(string); ok {
			out = append(out, PackageRoute{WorkflowType: types[i], ContentHash: hash})
		}
	}
	return out, next, nil
}
