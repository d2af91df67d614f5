package worker

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// waiter is the worker's connection for its blocking wait for work: a client of its own
// with a one-connection pool. A BLPOP holds its connection for up to a second; on the
// shared pool it would sit in the way of acks and renewals.
//
// A stop interrupts the wait with CLIENT UNBLOCK when the connection's id is known (a
// standalone Redis), else by closing the client, since go-redis does not abort a read
// when a context is cancelled.
type waiter struct {
	client redis.UniversalClient // nil: the worker's client is shared
	id     atomic.Int64          // CLIENT ID of client's connection; 0 = unknown
}

// newWaiter copies the options of rdb into a client of its own. The copy drops what
// belongs to the original client rather than to its configuration: its push notification
// processor (a second client cannot register handlers on it) and its client-side cache.
// Clients whose options cannot be copied (rings, custom implementations) share their pool.
func newWaiter(rdb redis.UniversalClient) *waiter {
	wt := &waiter{}
	switch c := rdb.(type) {
	case *redis.Client:
		opt := *c.Options()
		opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns, opt.MaxActiveConns = 1, 0, 1, 0
		opt.PushNotificationProcessor = nil
		opt.ClientSideCache, opt.ClientSideCacheConfig = nil, nil
		onConnect := opt.OnConnect
		opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
			if onConnect != nil {
				if err := onConnect(ctx, cn); err != nil {
					return err
				}
			}
			id, err := cn.ClientID(ctx).Result()
			if err != nil {
				id = 0 // e.g. miniredis: stop falls back to closing the client
			}
			wt.id.Store(id)
			return nil
		}
		wt.client = redis.NewClient(&opt)
	case *redis.ClusterClient:
		opt := *c.Options()
		opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns, opt.MaxActiveConns = 1, 0, 1, 0
		opt.PushNotificationProcessor = nil
		wt.client = redis.NewClusterClient(&opt)
	}
	return wt
}

// interrupt ends a wait in progress, and keeps doing so until done is closed (the waiting
// loop has seen its cancellation): a wait that starts after one CLIENT UNBLOCK gets the
// next. rdb is the worker's client, on the same server as the waiter's connection.
func (wt *waiter) interrupt(ctx context.Context, rdb redis.UniversalClient, done <-chan struct{}) {
	if wt.client == nil {
		<-done // the wait times out within waitTimeout
		return
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		id := wt.id.Load()
		if id == 0 || rdb.ClientUnblock(ctx, id).Err() != nil {
			_ = wt.client.Close()
			<-done
			return
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

func (wt *waiter) close() {
	if wt.client != nil {
		_ = wt.client.Close()
	}
}
