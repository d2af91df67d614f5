package headgate

import (
	"context"
	"encoding/json"
	"fmt"
)

// PutOutcome is how PutWorkerDeployment ended.
type PutOutcome string

const (
	PutCreated  PutOutcome = "created"
	PutReplaced PutOutcome = "replaced"
)

// PutWorkerDeployment writes a worker deployment's spec (Name, Versions, Labels). A new
// one starts in d.Desired (DesiredActive when empty); one that exists keeps its
// CreatedAt and desired state, which only SetDesiredState changes. Prior bytes that are
// undecodable are replaced (PutReplaced). It returns the deployment as stored.
func (s *Store) PutWorkerDeployment(ctx context.Context, d WorkerDeployment) (PutOutcome, *WorkerDeployment, error) {
	if err := validateRequired("Name", d.Name, true); err != nil {
		return "", nil, err
	}
	if d.Desired == "" {
		d.Desired = DesiredActive
	}
	if err := validateDesired(d.Desired); err != nil {
		return "", nil, err
	}
	for i, v := range d.Versions {
		if err := ValidateVersion(fmt.Sprintf("Versions[%d]", i), v); err != nil {
			return "", nil, err
		}
	}
	spec, err := json.Marshal(d)
	if err != nil {
		return "", nil, err
	}
	reply, err := s.run(ctx, scriptWfPutWorkerDeployment, d.Name, d.Name, spec, string(d.Desired))
	if err != nil {
		return "", nil, err
	}
	stored, err := decodeDeployment(d.Name, asString(reply, 1))
	if err != nil {
		return "", nil, err
	}
	return PutOutcome(asString(reply, 0)), stored, nil
}
