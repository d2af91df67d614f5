package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	clusterMasters  = 3
	clusterReplicas = 1
	clusterSlots    = 16384

	// clusterNodeTimeout is short so that failure detection, which some
	// tests wait on, happens within seconds rather than the default 15 s.
	clusterNodeTimeout = "2000"

	// createTimeout bounds `redis-cli --cluster create`, which polls once a
	// second until the nodes have met; it normally takes 1-3 s.
	createTimeout = 60 * time.Second
	// convergeTimeout bounds waiting for every node to report the same,
	// healthy slot map. That is Redis's own gossip, not ours to speed up.
	convergeTimeout = 30 * time.Second
)

// Cluster is a local Redis Cluster of redis-server processes: 3 masters and
// 3 replicas on loopback ports, each node with its own temp dir. It exists
// so that slot routing, MOVED handling and failover are tested against real
// Redis behaviour.
type Cluster struct {
	nodes []*Server // in creation order; Addrs follows it
}

// StartCluster starts a private cluster for one test; it is closed via
// tb.Cleanup. It returns once every node reports cluster_state:ok, all nodes
// agree on the slot map, and every replica is in sync with its master.
// Expect it to take about 4 s: roughly 2 s in redis-cli's join loop and 2 s
// until every node advertises the replicas.
//
// The skip/fatal rule of Start applies when redis-server or redis-cli is
// missing; HEADGATE_TEST_CLUSTER does not affect StartCluster.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	srv := lookBinary(tb, "redis-server", EnvCluster)
	cli := lookBinary(tb, "redis-cli", EnvCluster)
	c, err := newCluster(srv, cli)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

func newCluster(srvBin, cliBin string) (_ *Cluster, err error) {
	c := &Cluster{}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	extra := []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", clusterNodeTimeout,
		// Replicas sync diskless; the default 5 s delay (waiting for more
		// replicas to batch) would dominate cluster start-up time.
		"--repl-diskless-sync-delay", "0",
		// Redis 7 lists a replica in CLUSTER SLOTS only once its replication
		// offset is non-zero, i.e. after the master's first replication PING
		// (every 10 s by default). Ping every second so that a fresh cluster
		// shows its replicas, which the start-up check waits for, promptly.
		"--repl-ping-replica-period", "1",
	}
	// Nodes start in parallel; each one's start-up is independent.
	n := clusterMasters * (1 + clusterReplicas)
	nodes := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { nodes[i], errs[i] = newServer(srvBin, extra) })
	}
	wg.Wait()
	for _, s := range nodes {
		if s != nil {
			c.nodes = append(c.nodes, s)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("cluster node: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", fmt.Sprint(clusterReplicas), "--cluster-yes")
	cmd := exec.CommandContext(ctx, cliBin, args...)
	cmd.SysProcAttr = sysProcAttr()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\n--- output ---\n%s", cliBin, strings.Join(args, " "), err, tail(string(out), 30))
	}

	err = waitFor(convergeTimeout, func() error {
		if _, err := c.agreedSlots(true); err != nil {
			return err
		}
		return c.replicasInSync()
	})
	if err != nil {
		return nil, fmt.Errorf("cluster did not converge: %w", err)
	}
	return c, nil
}

// Addrs returns the addresses of all nodes, masters and replicas, including
// stopped ones.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a new cluster client seeded with every node, closed via
// tb.Cleanup. It uses go-redis defaults so tests exercise production
// routing and redirect behaviour. Note that with those defaults a client
// keeps routing a dead master's slots to it ("connection refused") until it
// sees a MOVED or its ClusterStateReloadInterval (60 s) passes; after
// Failover, call ReloadState or have the code under test handle it.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	tb.Cleanup(func() { _ = cc.Close() })
	return cc
}

// MasterFor returns the address of the master currently serving slot, as
// reported by the first running node that answers, or "" if none does.
// Right after Failover returns, all nodes agree.
func (c *Cluster) MasterFor(slot int) (addr string) {
	for _, s := range c.running() {
		slots, err := nodeSlots(s.Addr())
		if err != nil {
			continue
		}
		for _, r := range slots {
			if r.Start <= slot && slot <= r.End && len(r.Nodes) > 0 {
				return r.Nodes[0].Addr
			}
		}
	}
	return ""
}

// StopNode kills one node (SIGKILL), leaving the rest of the cluster to
// notice through its own failure detection.
func (c *Cluster) StopNode(addr string) error {
	s := c.node(addr)
	if s == nil {
		return fmt.Errorf("redistest: %s is not a node of this cluster", addr)
	}
	return s.Stop()
}

// RestartNode starts a stopped node again on its port, as a supervisor would
// restart a crashed process. Its data set starts empty (persistence is off)
// and it rejoins the cluster from its nodes.conf, so a master whose slots
// were failed over comes back as a replica of the new master and resyncs
// from it. RestartNode returns once every running node reports the same,
// healthy slot map and every replica, this one included, is in sync.
func (c *Cluster) RestartNode(addr string) error {
	s := c.node(addr)
	if s == nil {
		return fmt.Errorf("redistest: %s is not a node of this cluster", addr)
	}
	if err := s.Restart(); err != nil {
		return err
	}
	err := waitFor(convergeTimeout, func() error {
		if _, err := c.agreedSlots(false); err != nil {
			return err
		}
		return c.replicasInSync()
	})
	if err != nil {
		return fmt.Errorf("redistest: %s rejoined, but the cluster did not converge: %w", addr, err)
	}
	return nil
}

// Failover kills the master at masterAddr and promotes one of its replicas
// with CLUSTER FAILOVER TAKEOVER, then waits until the cluster is ok again,
// the replica is master and every running node maps the old master's slots
// to it. It returns the new master's address.
//
// TAKEOVER is used instead of waiting for the automatic failover election,
// which is slower and timing-dependent. Before the kill, Failover waits for
// the chosen replica to have caught up with the master's replication
// offset, so writes acknowledged before the call survive the failover just
// as they would after a clean handover; writes racing with the call may
// be lost, as in production.
func (c *Cluster) Failover(masterAddr string) (newMaster string, err error) {
	master := c.node(masterAddr)
	if master == nil {
		return "", fmt.Errorf("redistest: %s is not a node of this cluster", masterAddr)
	}
	if !master.running() {
		return "", fmt.Errorf("redistest: %s is not running", masterAddr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), convergeTimeout)
	defer cancel()

	// A node that came back as a replica a moment ago may still be flagged failing in the
	// master's view: wait until the master sees a running, healthy replica.
	var me clusterNodeLine
	var replica *Server
	err = waitFor(convergeTimeout, func() error {
		nodes, err := nodeList(ctx, masterAddr)
		if err != nil {
			return err
		}
		me = clusterNodeLine{}
		for _, n := range nodes {
			if n.has("myself") {
				me = n
			}
		}
		if !me.has("master") {
			return fmt.Errorf("%s is not a master (flags %s)", masterAddr, strings.Join(me.flags, ","))
		}
		for _, n := range nodes {
			if n.masterID == me.id && n.has("slave") && !n.has("fail") && !n.has("fail?") {
				if s := c.node(n.addr); s != nil && s.running() {
					replica = s
					return nil
				}
			}
		}
		return fmt.Errorf("master %s has no running replica", masterAddr)
	})
	if err != nil {
		return "", fmt.Errorf("redistest: failover: %w", err)
	}
	replicaAddr := replica.Addr()
	replicaID, err := nodeID(ctx, replicaAddr)
	if err != nil {
		return "", fmt.Errorf("redistest: failover: %w", err)
	}

	// Slots the old master owns, to check the new owner against.
	slots, err := nodeSlots(masterAddr)
	if err != nil {
		return "", fmt.Errorf("redistest: failover: %w", err)
	}
	var owned []redis.ClusterSlot
	for _, r := range slots {
		if len(r.Nodes) > 0 && r.Nodes[0].ID == me.id {
			owned = append(owned, r)
		}
	}

	if err := waitFor(5*time.Second, func() error { return replicaCaughtUp(masterAddr, replicaAddr) }); err != nil {
		return "", fmt.Errorf("redistest: failover: replica %s did not catch up with %s: %w", replicaAddr, masterAddr, err)
	}

	if err := master.Stop(); err != nil {
		return "", err
	}

	err = waitFor(convergeTimeout, func() error {
		rc := adminClient(replicaAddr)
		defer rc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := rc.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err()
		if err == nil {
			return nil
		}
		// The automatic election may have beaten us to it.
		if role, rerr := rc.Do(ctx, "ROLE").Slice(); rerr == nil && len(role) > 0 && role[0] == "master" {
			return nil
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("redistest: failover: CLUSTER FAILOVER TAKEOVER on %s: %w", replicaAddr, err)
	}

	err = waitFor(convergeTimeout, func() error {
		rc := adminClient(replicaAddr)
		defer rc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		role, err := rc.Do(ctx, "ROLE").Slice()
		if err != nil {
			return err
		}
		if len(role) == 0 || role[0] != "master" {
			return fmt.Errorf("%s still has role %v", replicaAddr, role)
		}
		agreed, err := c.agreedSlots(false)
		if err != nil {
			return err
		}
		for _, o := range owned {
			if owner := ownerOf(agreed, o.Start); owner != replicaID {
				return fmt.Errorf("slot %d owned by %s, want %s", o.Start, owner, replicaID)
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("redistest: failover of %s to %s did not converge: %w", masterAddr, replicaAddr, err)
	}
	return replicaAddr, nil
}

// Close stops every node and removes their temp dirs.
func (c *Cluster) Close() {
	for _, s := range c.nodes {
		s.Close()
	}
}

func (c *Cluster) node(addr string) *Server {
	for _, s := range c.nodes {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

func (c *Cluster) running() []*Server {
	var out []*Server
	for _, s := range c.nodes {
		if s.running() {
			out = append(out, s)
		}
	}
	return out
}

// agreedSlots checks that every running node reports cluster_state:ok and
// the same slot map covering all slots, and returns that map. With
// withReplicas, every slot range must also have a replica in every view
// (true for a freshly created cluster, not after a master was killed).
func (c *Cluster) agreedSlots(withReplicas bool) ([]redis.ClusterSlot, error) {
	var (
		first     []redis.ClusterSlot
		firstSig  string
		firstAddr string
	)
	for _, s := range c.running() {
		addr := s.Addr()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := clusterInfo(ctx, addr)
		cancel()
		if err != nil {
			return nil, err
		}
		if st, _ := infoField(info, "cluster_state"); st != "ok" {
			return nil, fmt.Errorf("%s: cluster_state:%s", addr, st)
		}
		slots, err := nodeSlots(addr)
		if err != nil {
			return nil, err
		}
		sig, covered := slotSignature(slots)
		if covered != clusterSlots {
			return nil, fmt.Errorf("%s: %d of %d slots covered", addr, covered, clusterSlots)
		}
		if withReplicas {
			for _, r := range slots {
				if len(r.Nodes) < 1+clusterReplicas {
					return nil, fmt.Errorf("%s: slots %d-%d have no replica yet", addr, r.Start, r.End)
				}
			}
		}
		if first == nil {
			first, firstSig, firstAddr = slots, sig, addr
			continue
		}
		if sig != firstSig {
			return nil, fmt.Errorf("slot maps differ: %s has %s; %s has %s", firstAddr, firstSig, addr, sig)
		}
	}
	if first == nil {
		return nil, errors.New("no running nodes")
	}
	return first, nil
}

// replicasInSync checks that every running replica's link to its master is
// up, so that a Failover right after start does not promote an empty node.
func (c *Cluster) replicasInSync() error {
	for _, s := range c.running() {
		addr := s.Addr()
		rc := adminClient(addr)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := rc.Info(ctx, "replication").Result()
		cancel()
		rc.Close()
		if err != nil {
			return err
		}
		if role, _ := infoField(info, "role"); role != "slave" {
			continue
		}
		if st, _ := infoField(info, "master_link_status"); st != "up" {
			return fmt.Errorf("replica %s: master_link_status:%s", addr, st)
		}
	}
	return nil
}

// replicaCaughtUp reports whether the replica has processed everything the
// master has written so far.
func replicaCaughtUp(masterAddr, replicaAddr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	mc, rc := adminClient(masterAddr), adminClient(replicaAddr)
	defer mc.Close()
	defer rc.Close()
	mi, err := mc.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	ri, err := rc.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	mOff, _ := infoField(mi, "master_repl_offset")
	rOff, _ := infoField(ri, "slave_repl_offset")
	var m, r int64
	if _, err := fmt.Sscan(mOff, &m); err != nil {
		return fmt.Errorf("master_repl_offset %q: %w", mOff, err)
	}
	if _, err := fmt.Sscan(rOff, &r); err != nil {
		return fmt.Errorf("slave_repl_offset %q: %w", rOff, err)
	}
	if r < m {
		return fmt.Errorf("replica offset %d < master offset %d", r, m)
	}
	return nil
}

// slotSignature renders a slot map canonically (ranges sorted, replicas
// sorted) so different nodes' views can be compared, and counts the slots
// it covers.
func slotSignature(slots []redis.ClusterSlot) (string, int) {
	parts := make([]string, 0, len(slots))
	covered := 0
	for _, r := range slots {
		covered += r.End - r.Start + 1
		var master string
		var replicas []string
		for i, n := range r.Nodes {
			if i == 0 {
				master = n.ID
			} else {
				replicas = append(replicas, n.ID)
			}
		}
		slices.Sort(replicas)
		parts = append(parts, fmt.Sprintf("%05d-%05d:%s[%s]", r.Start, r.End, short(master), shortAll(replicas)))
	}
	slices.Sort(parts)
	return strings.Join(parts, " "), covered
}

func ownerOf(slots []redis.ClusterSlot, slot int) string {
	for _, r := range slots {
		if r.Start <= slot && slot <= r.End && len(r.Nodes) > 0 {
			return r.Nodes[0].ID
		}
	}
	return ""
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func shortAll(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = short(id)
	}
	return strings.Join(out, ",")
}

func nodeSlots(addr string) ([]redis.ClusterSlot, error) {
	rc := adminClient(addr)
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	slots, err := rc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER SLOTS: %w", addr, err)
	}
	return slots, nil
}

func clusterInfo(ctx context.Context, addr string) (string, error) {
	rc := adminClient(addr)
	defer rc.Close()
	info, err := rc.ClusterInfo(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("%s: CLUSTER INFO: %w", addr, err)
	}
	return info, nil
}

func nodeID(ctx context.Context, addr string) (string, error) {
	rc := adminClient(addr)
	defer rc.Close()
	id, err := rc.ClusterMyID(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("%s: CLUSTER MYID: %w", addr, err)
	}
	return id, nil
}

// clusterNodeLine is one line of CLUSTER NODES:
// <id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
type clusterNodeLine struct {
	id       string
	addr     string // ip:port
	flags    []string
	masterID string // "-" for masters
}

func (n clusterNodeLine) has(flag string) bool { return slices.Contains(n.flags, flag) }

func nodeList(ctx context.Context, addr string) ([]clusterNodeLine, error) {
	rc := adminClient(addr)
	defer rc.Close()
	raw, err := rc.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER NODES: %w", addr, err)
	}
	var out []clusterNodeLine
	for line := range strings.SplitSeq(raw, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		a, _, _ := strings.Cut(f[1], "@")
		a, _, _ = strings.Cut(a, ",")
		out = append(out, clusterNodeLine{id: f[0], addr: a, flags: strings.Split(f[2], ","), masterID: f[3]})
	}
	return out, nil
}

// waitFor polls check with a short backoff until it returns nil or timeout
// passes, returning the last error. It is for waiting on process startup and
// Redis's own cluster convergence, which have no completion event to wait on.
func waitFor(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	backoff := 10 * time.Millisecond
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		time.Sleep(backoff)
		backoff = min(backoff*2, 200*time.Millisecond)
	}
}

// Shared cluster state: one cluster per test binary, started on first use.
var (
	sharedClusterOnce sync.Once
	sharedCl          *Cluster
	sharedClErr       error
)

// SharedCluster returns a cluster client to a Redis Cluster shared by every
// test in this test binary (started once, lazily), or to
// HEADGATE_TEST_CLUSTER ("addr1,addr2,...") when that is set. The dynamic
// type is *redis.ClusterClient. Creating a cluster takes seconds, so tests
// that only need cluster routing should share one; tests that kill nodes
// must use StartCluster.
//
// Tests isolate themselves by key namespace and never FLUSHALL. The same
// skip/fatal rule as Start applies when redis-server or redis-cli is
// missing. The client is closed via tb.Cleanup.
func SharedCluster(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	if v := strings.TrimSpace(os.Getenv(EnvCluster)); v != "" {
		var addrs []string
		for a := range strings.SplitSeq(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		tb.Cleanup(func() { _ = cc.Close() })
		// Set on purpose, so unreachable means misconfigured: fail, don't skip.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := cc.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.Ping(ctx).Err()
		})
		if err != nil {
			tb.Fatalf("redistest: %s=%q is not reachable: %v", EnvCluster, v, err)
		}
		return cc
	}

	srv := lookBinary(tb, "redis-server", EnvCluster)
	cli := lookBinary(tb, "redis-cli", EnvCluster)
	// No tb calls inside Do: Skip/Fatal would unwind through the Once.
	sharedClusterOnce.Do(func() {
		sharedCl, sharedClErr = newCluster(srv, cli)
	})
	if sharedClErr != nil {
		tb.Fatalf("redistest: shared cluster: %v", sharedClErr)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: sharedCl.Addrs()})
	tb.Cleanup(func() { _ = cc.Close() })
	return cc
}
