// Package reroute makes a Redis Cluster client find a slot's new master after a call
// failed because the master it used is gone or no longer serves the slot.
//
// go-redis's ClusterClient reloads its slot map by itself only on a MOVED or ASK reply to
// a command it routed, and every ClusterStateReloadInterval (60 s by default). When a
// master dies, its replica is promoted within seconds, but the client keeps sending that
// master's slots to the dead address ("connection refused") until the interval passes,
// and a MOVED reply to a command sent on one node's own client (as a pipeline with WAIT
// must be) never reaches the cluster client. Callers that retry after such failures ask
// for a reload here, so their retries go to the new master.
package reroute

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/redis/go-redis/v9"
)

// AfterFailure asks rdb, when it is a cluster client, to reload its slot map when err
// says the node a call went to is unreachable or no longer the slot's master. The reload
// runs in the background; go-redis coalesces concurrent requests, so calling this after
// every failure costs at most a few CLUSTER SLOTS a second. Other clients and other
// errors are left alone.
func AfterFailure(rdb redis.UniversalClient, err error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok || !RoutingFailure(err) {
		return
	}
	cc.ReloadState(context.Background())
}

// redirects are the error replies of a node that does not serve the slot as a master
// (any more, or yet).
var redirects = []string{"MOVED", "ASK", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "MASTERDOWN", "LOADING"}

// RoutingFailure reports whether err means the call's node was unreachable or did not
// serve the slot: a network error, a connection closed mid-call, or a cluster redirect.
// A cancelled context is not one, nor is a closed client; a deadline may be (a master
// that stopped answering).
func RoutingFailure(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	for _, p := range redirects {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
