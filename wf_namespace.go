package headgate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// NamespaceOrigin is how a namespace came to be registered.
type NamespaceOrigin string

const (
	NamespaceExplicit   NamespaceOrigin = "explicit"    // an operator or a deploy registered it
	NamespaceWorkerMint NamespaceOrigin = "worker_mint" // a worker registered it on first use
)

// NamespaceState is a registered namespace's lifecycle state.
type NamespaceState string

const (
	NamespaceActive     NamespaceState = "active"
	NamespaceDeprecated NamespaceState = "deprecated"
)

// PlacementMode says where a namespace's slot should live on a cluster.
type PlacementMode string

const (
	PlacementUnplaced PlacementMode = "unplaced" // anywhere
	PlacementPrefer   PlacementMode = "prefer"   // on Nodes when they are up
	PlacementRequire  PlacementMode = "require"  // only on Nodes
)

// NamespacePlacement is a namespace's placement.
type NamespacePlacement struct {
	Mode  PlacementMode `json:"mode"`
	Nodes []string      `json:"nodes,omitempty"`
}

// NamespaceConfig is the free-form configuration a namespace was registered with.
type NamespaceConfig struct {
	Kind   string            `json:"kind,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// NamespaceRecord is a namespace's entry in the registry.
type NamespaceRecord struct {
	Name      string
	Origin    NamespaceOrigin
	State     NamespaceState
	Placement NamespacePlacement
	Config    NamespaceConfig
	// CreatedAt is when it was registered (ms precision); LastSeen is bumped by every
	// register, put or placement change of the name.
	CreatedAt time.Time
	LastSeen  time.Time
}

// MintOutcome is how Register or Put ended.
type MintOutcome string

const (
	MintCreated        MintOutcome = "created"
	MintAlreadyExisted MintOutcome = "already_existed"
)

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	// Scope keeps a registry apart from the deployment's one: its keys live under
	// "hg:{registry:<Scope>}:" rather than "hg:{registry}:". Tests give each case a
	// scope. Defaults to "": the deployment's registry.
	Scope string
	// Scripts is how the registry runs its scripts, as StoreConfig.Scripts. Defaults to
	// ScriptsDefault.
	Scripts ScriptMode
}

// Registry is the namespace registry: which namespaces exist, how they came to be, their
// state and placement. It spans namespaces, so it lives in a slot of its own; every
// change is one Lua script there, on the registry's store clock.
type Registry struct {
	rdb     redis.UniversalClient
	keys    keys
	scripts *scriptRunner
}

// NewRegistry returns the namespace registry on rdb.
func NewRegistry(rdb redis.UniversalClient, cfg *RegistryConfig) (*Registry, error) {
	if rdb == nil {
		return nil, invalid("rdb", "is nil")
	}
	if cfg == nil {
		cfg = &RegistryConfig{}
	}
	if err := validateName("Scope", cfg.Scope, true); err != nil {
		return nil, err
	}
	mode := cmp.Or(cfg.Scripts, ScriptsDefault)
	if err := mode.validate(); err != nil {
		return nil, err
	}
	k := registryKeys(cfg.Scope)
	return &Registry{rdb: rdb, keys: k, scripts: newScriptRunner(rdb, k.Prefix(), mode)}, nil
}

func (r *Registry) run(ctx context.Context, sc script, name string, args ...any) ([]any, error) {
	return r.scripts.run(ctx, sc, name, args...)
}

var namespaceFields = []string{"name", "origin", "state", "placement", "config", "created", "seen"}

func namespaceFromRow(v []any) (*NamespaceRecord, error) {
	if len(v) != len(namespaceFields) || v[0] == nil {
		return nil, nil
	}
	f := func(i int) string { s, _ := v[i].(string); return s }
	ms := func(i int) time.Time { n, _ := strconv.ParseInt(f(i), 10, 64); return time.UnixMilli(n) }
	rec := &NamespaceRecord{Name: f(0), Origin: NamespaceOrigin(f(1)), State: NamespaceState(f(2)),
		CreatedAt: ms(5), LastSeen: ms(6)}
	if err := json.Unmarshal([]byte(f(3)), &rec.Placement); err != nil {
		return nil, fmt.Errorf("headgate: namespace %q: placement: %w", rec.Name, err)
	}
	if err := json.Unmarshal([]byte(f(4)), &rec.Config); err != nil {
		return nil, fmt.Errorf("headgate: namespace %q: config: %w", rec.Name, err)
	}
	return rec, nil
}

// Get returns a registered namespace, or nil when the name is not registered.
func (r *Registry) Get(ctx context.Context, name string) (*NamespaceRecord, error) {
	v, err := r.rdb.HMGet(ctx, r.keys.NamespaceRecord(name), namespaceFields...).Result()
	if err != nil {
		return nil, err
	}
	return namespaceFromRow(v)
}

// List returns a page of the registered namespaces ordered by CreatedAt, then name, and
// the cursor of the next page ("" at the end). limit defaults to 100 (0), at most 1,000.
func (r *Registry) List(ctx context.Context, cursor string, limit int) ([]*NamespaceRecord, string, error) {
	members, next, err := lexPage(ctx, r.rdb, r.keys.NamespaceIndex(), "-", "+", cursor, limit)
	if err != nil || len(members) == 0 {
		return nil, next, err
	}
	pipe := r.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(members))
	for i, m := range members {
		cmds[i] = pipe.HMGet(ctx, r.keys.NamespaceRecord(idOfMember(m)), namespaceFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, "", err
	}
	out := make([]*NamespaceRecord, 0, len(members))
	for _, c := range cmds {
		rec, err := namespaceFromRow(c.Val())
		if err != nil {
			return nil, "", err
		}
		if rec != nil {
			out = append(out, rec)
		}
	}
	return out, next, nil
}

func validatePlacement(p NamespacePlacement) error {
	switch p.Mode {
	case PlacementUnplaced, PlacementPrefer, PlacementRequire:
	default:
		return invalid("Placement.Mode", "%q is not a placement mode", p.Mode)
	}
	for i, n := range p.Nodes {
		if err := validateRequired(fmt.Sprintf("Placement.Nodes[%d]", i), n, true); err != nil {
			return err
		}
	}
	return nil
}

func validateOrigin(o NamespaceOrigin) error {
	if o != NamespaceExplicit && o != NamespaceWorkerMint {
		return invalid("origin", "%q is not a namespace origin", o)
	}
	return nil
}
