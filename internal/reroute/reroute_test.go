package reroute_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/reroute"
	"github.com/redis/go-redis/v9"
)

// replyError is an error reply of a Redis server, as go-redis returns it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func TestRoutingFailure(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("headgate: admit: %w", refused), true},
		{fmt.Errorf("headgate: ack: %w", io.EOF), true},
		{io.ErrUnexpectedEOF, true},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("headgate: enqueue: %w", replyError("MOVED 3739 127.0.0.1:7001")), true},
		{replyError("CLUSTERDOWN The cluster is down"), true},
		{replyError("READONLY You can't write against a read only replica."), true},
		{replyError("LOADING Redis is loading the dataset in memory"), true},
		{context.Canceled, false},
		{redis.ErrClosed, false},
		{replyError("ERR user_script:1: Script attempted to access nonexistent global variable"), false},
		{&headgate.BackpressureError{Queue: "q", Limit: 1}, false},
		{&headgate.NotDurableError{Replicas: 0, Wanted: 1}, false},
		{errors.New("something else"), false},
	} {
		if got := reroute.RoutingFailure(c.err); got != c.want {
			t.Errorf("RoutingFailure(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
