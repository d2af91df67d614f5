package headgate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ServerReport is what CheckServer found on each server that holds data: the server
// itself, or every master of a cluster.
type ServerReport struct {
	Nodes []NodeReport
}

// NodeReport is one server's memory configuration, from INFO memory.
type NodeReport struct {
	Addr string
	// MaxMemory is maxmemory in bytes; 0 means no limit (nothing is ever evicted).
	MaxMemory int64
	// Policy is maxmemory-policy, e.g. "noeviction" or "allkeys-lru"; "" when unknown.
	Policy string
	// Unknown says why the node could not be checked (INFO refused or not supported,
	// as on miniredis); empty when it was.
	Unknown string
	// Replica: the server is a replica (INFO replication, role:slave), which refuses
	// writes (READONLY), or loses them at its next sync when it is writable.
	Replica bool
}

// Evicts reports whether the node may delete keys that have no TTL to free memory.
// Headgate's jobs, queues and indexes have none, so volatile-* policies never touch
// them (only short-lived records do have one: admission records, per-minute counts);
// allkeys-* ones pick any key, a job's included.
func (n NodeReport) Evicts() bool {
	return n.MaxMemory > 0 && strings.HasPrefix(n.Policy, "allkeys-")
}

// EvictionPolicyError: a server is configured to evict keys at its memory limit, which
// would delete jobs (or the indexes that find them) without a trace. Set its
// maxmemory-policy to noeviction (or a volatile-* policy): at the limit, Redis then
// refuses writes, and an enqueue fails with ErrOutOfMemory instead of a job vanishing
// later.
type EvictionPolicyError struct {
	Addr      string
	Policy    string
	MaxMemory int64
}

func (e *EvictionPolicyError) Error() string {
	return fmt.Sprintf("headgate: Redis %s has maxmemory-policy %s with maxmemory %d bytes: at the limit it evicts "+
		"any key, jobs included; set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, or "+
		"the provider's parameter group)", e.Addr, e.Policy, e.MaxMemory)
}

// ReplicaError: the client talks to a replica, not a master. Every transition writes,
// so every call would fail with READONLY: point the client at the master (with
// Sentinel, a redis.NewFailoverClient without ReplicaOnly; on a managed service, the
// primary endpoint rather than the reader endpoint).
type ReplicaError struct {
	Addr string
}

func (e *ReplicaError) Error() string {
	return fmt.Sprintf("headgate: Redis %s is a replica, which refuses writes: point the client at the master "+
		"(with Sentinel, redis.NewFailoverClient without ReplicaOnly; on a managed service, the primary endpoint)", e.Addr)
}

// ErrOutOfMemory: Redis is at its maxmemory under a policy that does not evict
// (noeviction) and refused the call before running it; nothing was written. Free memory
// (evict retained jobs, raise maxmemory) and try again. Redis refuses every script under
// this condition, acks included, so workers stall until memory is freed.
var ErrOutOfMemory = errors.New("headgate: Redis is out of memory (maxmemory reached, noeviction)")

// outOfMemory is err as ErrOutOfMemory when Redis refused the call what (a write made
// without a script) for lack of memory, as decodeReply makes a script's refusal. A
// transaction refused so is EXECABORT, its refused command's error saying why.
func outOfMemory(what string, err error, cmds ...redis.Cmder) error {
	for _, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "OOM") {
			err = c.Err()
			break
		}
	}
	if redis.HasErrorPrefix(err, "OOM") {
		return fmt.Errorf("%w: %s refused: %w", ErrOutOfMemory, what, err)
	}
	return err
}

// CheckServer reads the memory configuration of rdb's servers (INFO memory, which
// managed services allow where CONFIG GET is often disabled) and returns
// *EvictionPolicyError when one of them evicts keys without a TTL, which would delete
// jobs silently, or *ReplicaError when the client talks to a replica (INFO
// replication), where every call would fail. A server that does not answer INFO memory
// is reported Unknown, not an error. worker.Start calls it and refuses to start on *EvictionPolicyError unless
// Config.AllowEvictionPolicy is set; producers and operators may call it at start too.
func CheckServer(ctx context.Context, rdb redis.UniversalClient) (*ServerReport, error) {
	rep := &ServerReport{}
	var mu sync.Mutex
	check := func(ctx context.Context, c *redis.Client) error {
		n, err := checkNode(ctx, c)
		if err != nil {
			return err
		}
		mu.Lock()
		rep.Nodes = append(rep.Nodes, n)
		mu.Unlock()
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, check)
	case *redis.Client:
		err = check(ctx, c)
	default:
		return nil, fmt.Errorf("headgate: CheckServer: unsupported client %T", rdb)
	}
	if err != nil {
		return rep, fmt.Errorf("headgate: check server: %w", err)
	}
	for _, n := range rep.Nodes {
		if n.Replica {
			return rep, &ReplicaError{Addr: n.Addr}
		}
		if n.Evicts() {
			return rep, &EvictionPolicyError{Addr: n.Addr, Policy: n.Policy, MaxMemory: n.MaxMemory}
		}
	}
	return rep, nil
}

func checkNode(ctx context.Context, c *redis.Client) (NodeReport, error) {
	n := NodeReport{Addr: c.Options().Addr}
	info, err := c.Info(ctx, "memory").Result()
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr):
		// NOPERM for a user without INFO, or a server without the section.
		n.Unknown = "INFO memory refused: " + err.Error()
		return n, nil
	case err != nil:
		return n, err
	}
	fields := map[string]string{}
	for line := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	policy, ok := fields["maxmemory_policy"]
	max, err := strconv.ParseInt(fields["maxmemory"], 10, 64)
	if !ok || err != nil {
		n.Unknown = "INFO memory reports no maxmemory and maxmemory_policy"
		return n, nil
	}
	n.Policy, n.MaxMemory = policy, max
	// A server that answers INFO memory answers INFO replication; one that refuses it
	// leaves the role unknown, as before.
	if repl, err := c.Info(ctx, "replication").Result(); err == nil {
		n.Replica = strings.Contains(repl, "\nrole:slave") || strings.HasPrefix(repl, "role:slave")
	} else if !errors.As(err, &rerr) {
		return n, err
	}
	return n, nil
}
