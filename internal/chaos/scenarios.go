//go:build linux

package chaos

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/headgate/headgate/internal/redistest"
)

// Scenarios returns the suite's scenarios; the servers they start belong to tb.
func Scenarios(tb testing.TB, opts Options) []Scenario {
	single := func(s *redistest.Server) *Target {
		c := Connection{Mode: "single", Addrs: []string{s.Addr()}}
		return &Target{Conn: c, Direct: c, server: s}
	}
	return []Scenario{
		{
			// Worker processes SIGKILLed at random under load, each replaced by a new
			// one; every third round freezes one (SIGSTOP) past its lease instead, so
			// that it wakes up as a stale holder.
			Name:  "worker-kill",
			Setup: func(context.Context) (*Target, error) { return single(redistest.Start(tb)), nil },
			Inject: func(ctx context.Context, r *Run, round int) error {
				if round%3 == 2 {
					id, err := r.FreezeWorker(ctx, 2*opts.Lease)
					r.logf("round %d: worker %s frozen for %s", round, id, 2*opts.Lease)
					return err
				}
				id := r.KillWorker()
				nid, err := r.StartWorker()
				r.logf("round %d: worker %s SIGKILLed, %s started", round, id, nid)
				return err
			},
		},
		{
			// redis-server SIGKILLed and restarted from its append-only file, fsynced at
			// every write: what it acknowledged survives.
			Name: "redis-kill",
			Setup: func(context.Context) (*Target, error) {
				return single(redistest.StartWith(tb, "--appendonly", "yes", "--appendfsync", "always")), nil
			},
			Inject: func(ctx context.Context, r *Run, round int) error {
				srv := r.target.server
				if err := srv.Stop(); err != nil {
					return err
				}
				pause(ctx, opts.Outage) // the outage
				start := time.Now()
				if err := srv.Restart(); err != nil {
					return err
				}
				r.logf("round %d: redis-server SIGKILLed, down %s, restarted (AOF loaded) in %s", round, opts.Outage,
					time.Since(start).Round(time.Millisecond))
				return nil
			},
		},
		{
			// redis-server frozen by SIGSTOP for longer than the lease: clients time
			// out, and when it resumes the store clock has jumped past every lease.
			Name:  "redis-stop",
			Setup: func(context.Context) (*Target, error) { return single(redistest.Start(tb)), nil },
			Inject: func(ctx context.Context, r *Run, round int) error {
				srv := r.target.server
				if err := srv.Signal(syscall.SIGSTOP); err != nil {
					return err
				}
				pause(ctx, opts.Outage)
				r.logf("round %d: redis-server frozen for %s", round, opts.Outage)
				return srv.Signal(syscall.SIGCONT)
			},
		},
		{
			// Every connection through a proxy that delays, stalls, refuses and cuts
			// them mid-call.
			Name: "proxy",
			Setup: func(context.Context) (*Target, error) {
				srv := redistest.Start(tb)
				p, err := NewProxy(srv.Addr())
				if err != nil {
					return nil, err
				}
				tb.Cleanup(func() { _ = p.Close() })
				t := single(srv)
				t.proxy = p
				t.Conn = Connection{Mode: "single", Addrs: []string{p.Addr()}}
				return t, nil
			},
			Inject: func(ctx context.Context, r *Run, round int) error {
				p := r.target.proxy
				var what string
				switch round % 4 {
				case 0:
					what = "delay 150ms"
					p.SetFault(Fault{Delay: 150 * time.Millisecond})
					pause(ctx, opts.Outage)
				case 1:
					what = "cut mid-call (5% of chunks) and every connection reset"
					p.SetFault(Fault{ResetChance: 0.05})
					n := p.ResetAll()
					pause(ctx, opts.Outage)
					what += fmt.Sprintf(" (%d open)", n)
				case 2:
					what = "stall"
					p.SetFault(Fault{Stall: true})
					pause(ctx, opts.Outage)
				case 3:
					what = "refuse new connections, reset open ones"
					p.SetFault(Fault{Refuse: true})
					p.ResetAll()
					pause(ctx, opts.Outage)
				}
				p.Heal()
				r.logf("round %d: proxy: %s for %s", round, what, opts.Outage)
				return nil
			},
		},
		{
			// SENTINEL FAILOVER under load: the replica is promoted, the old master
			// demoted; producers acknowledge only what a replica has (WAIT).
			Name: "sentinel-failover",
			// A failover soon after another waits about ten seconds for the sentinel to
			// turn the old master into a replica it can promote.
			Rounds: max(1, opts.Rounds/4),
			Setup: func(context.Context) (*Target, error) {
				s := redistest.StartSentinel(tb)
				c := Connection{Mode: "sentinel", Addrs: []string{s.Addr()}, MasterName: redistest.SentinelMaster}
				return &Target{Conn: c, Direct: c, DurableReplicas: 1, sentinel: s}, nil
			},
			Inject: func(ctx context.Context, r *Run, round int) error {
				s := r.target.sentinel
				start := time.Now()
				m, err := s.Failover(ctx)
				r.logf("round %d: sentinel failover to %s took %s", round, m, time.Since(start).Round(time.Millisecond))
				return err
			},
		},
		{
			// The master of the namespace's slot killed and its replica promoted, then
			// the old master restarted as a replica (as a supervisor would).
			Name: "cluster-failover",
			Setup: func(context.Context) (*Target, error) {
				cl := redistest.StartCluster(tb)
				c := Connection{Mode: "cluster", Addrs: cl.Addrs()}
				return &Target{Conn: c, Direct: c, DurableReplicas: 1, cluster: cl}, nil
			},
			Inject: func(ctx context.Context, r *Run, round int) error {
				cl := r.target.cluster
				admin := cl.Client(tb)
				slot, err := admin.ClusterKeySlot(ctx, "hg:{"+r.namespace+"}:").Result()
				if err != nil {
					return err
				}
				master := cl.MasterFor(int(slot))
				start := time.Now()
				m, err := cl.Failover(master)
				if err != nil {
					return err
				}
				r.logf("round %d: master %s killed, %s promoted in %s", round, master, m, time.Since(start).Round(time.Millisecond))
				if err := cl.RestartNode(master); err != nil {
					return err
				}
				r.logf("round %d: %s back as a replica", round, master)
				return nil
			},
		},
	}
}
