package headgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DesiredState is what an operator wants a worker deployment to do.
type DesiredState string

const (
	DesiredActive   DesiredState = "active"   // serve its versions
	DesiredDraining DesiredState = "draining" // finish what it has, take no new runs
	DesiredDrained  DesiredState = "drained"  // hold nothing
)

func validateDesired(d DesiredState) error {
	switch d {
	case DesiredActive, DesiredDraining, DesiredDrained:
		return nil
	}
	return invalid("desired", "%q is not a desired state", d)
}

// WorkerDeployment is a fleet of workers serving a set of package versions.
type WorkerDeployment struct {
	Name string `json:"name"`
	// Versions are the content hashes the deployment serves.
	Versions []string          `json:"versions,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`

	// Desired is set on creation (defaults to DesiredActive) and then only by
	// SetDesiredState: a put keeps the stored one.
	Desired DesiredState `json:"-"`
	// Store times: CreatedAt survives puts; UpdatedAt is the last write;
	// DesiredChangedAt the last change of Desired.
	CreatedAt        time.Time `json:"-"`
	UpdatedAt        time.Time `json:"-"`
	DesiredChangedAt time.Time `json:"-"`
}

// UndecodableWorkerDeployment is a stored row that is not a deployment this store wrote.
type UndecodableWorkerDeployment struct {
	Name  string
	Error string
}

// WorkerDeploymentListing is one page of ListWorkerDeployments: undecodable rows are
// listed apart, never dropped.
type WorkerDeploymentListing struct {
	Deployments []*WorkerDeployment
	Undecodable []UndecodableWorkerDeployment
}

type deploymentMeta struct {
	Created   *int64        `json:"created"`
	Updated   *int64        `json:"updated"`
	Desired   *DesiredState `json:"desired"`
	DesiredAt *int64        `json:"desired_at"`
}

// decodeDeployment reads a stored row "<meta JSON>\n<spec JSON>" (see deployment_row in
// lua/lib.lua).
func decodeDeployment(name, row string) (*WorkerDeployment, error) {
	metaText, spec, ok := strings.Cut(row, "\n")
	if !ok {
		return nil, fmt.Errorf("headgate: worker deployment %q: not a stored record", name)
	}
	var m deploymentMeta
	if err := json.Unmarshal([]byte(metaText), &m); err != nil {
		return nil, fmt.Errorf("headgate: worker deployment %q: %w", name, err)
	}
	if m.Created == nil || m.Updated == nil || m.Desired == nil || m.DesiredAt == nil || validateDesired(*m.Desired) != nil {
		return nil, fmt.Errorf("headgate: worker deployment %q: incomplete record", name)
	}
	d := &WorkerDeployment{}
	if err := json.Unmarshal([]byte(spec), d); err != nil {
		return nil, fmt.Errorf("headgate: worker deployment %q: %w", name, err)
	}
	if d.Name != name {
		return nil, fmt.Errorf("headgate: worker deployment %q: record names %q", name, d.Name)
	}
	d.Desired, d.CreatedAt = *m.Desired, time.UnixMilli(*m.Created)
	d.UpdatedAt, d.DesiredChangedAt = time.UnixMilli(*m.Updated), time.UnixMilli(*m.DesiredAt)
	return d, nil
}

// GetWorkerDeployment returns a worker deployment, nil when absent, or an error when its
// row is undecodable.
func (s *Store) GetWorkerDeployment(ctx context.Context, name string) (*WorkerDeployment, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	row, err := s.rdb.HGet(ctx, s.keys.Deployments(), name).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeDeployment(name, row)
}

// ListWorkerDeployments returns a page of worker deployments in name order (undecodable
// rows apart), and the cursor of the next page ("" at the end). A cursor that is not one
// this listing printed is *InvalidError of "cursor", and nothing is read.
func (s *Store) ListWorkerDeployments(ctx context.Context, cursor string, limit int) (*WorkerDeploymentListing, string, error) {
	if err := checkNameCursor(cursor); err != nil {
		return nil, "", err
	}
	if err := s.checkFormat(ctx); err != nil {
		return nil, "", err
	}
	names, next, err := s.lexPage(ctx, s.keys.DeploymentIndex(), "-", "+", cursor, limit)
	if err != nil {
		return nil, "", err
	}
	out := &WorkerDeploymentListing{}
	if len(names) == 0 {
		return out, next, nil
	}
	v, err := s.rdb.HMGet(ctx, s.keys.Deployments(), names...).Result()
	if err != nil {
		return nil, "", err
	}
	for i, x := range v {
		row, ok := x.(string)
		if !ok {
			continue
		}
		d, err := decodeDeployment(names[i], row)
		if err != nil {
			out.Undecodable = append(out.Undecodable, UndecodableWorkerDeployment{Name: names[i], Error: err.Error()})
			continue
		}
		out.Deployments = append(out.Deployments, d)
	}
	return out, next, nil
}
