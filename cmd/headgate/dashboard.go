package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/dashboard"
)

// dashboardOpts are the flags of the dashboard command.
type dashboardOpts struct {
	addr         string
	allowActions bool
	rateClasses  string
}

// dashboardFlags holds each invocation's flags of the dashboard command.
var dashboardFlags sync.Map // *cli -> *dashboardOpts

func dashboardFlagSet(fs *flag.FlagSet, c *cli) {
	o := &dashboardOpts{}
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen on `host:port`")
	fs.BoolVar(&o.allowActions, "allow-actions", false, "let the dashboard retry, delete, cancel, pause, resume and release (from loopback clients)")
	fs.StringVar(&o.rateClasses, "rate-classes", "", "comma-separated rate `classes` whose tokens the dashboard shows")
	dashboardFlags.Store(c, o)
}

// cmdDashboard serves the dashboard until interrupted. -timeout bounds each request's
// calls to Redis, not the command.
func cmdDashboard(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 0); err != nil {
		return err
	}
	o := &dashboardOpts{addr: "127.0.0.1:8080"}
	if v, ok := dashboardFlags.LoadAndDelete(c); ok {
		o = v.(*dashboardOpts)
	}
	ctx, stop := signal.NotifyContext(context.WithoutCancel(ctx), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rdb, err := c.connect()
	if err != nil {
		return err
	}
	defer rdb.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return serveDashboard(ctx, c, rdb, ln, o)
}

// serveDashboard serves the dashboard on ln until ctx ends, then lets requests in flight
// finish for a few seconds.
func serveDashboard(ctx context.Context, c *cli, rdb redis.UniversalClient, ln net.Listener, o *dashboardOpts) error {
	var classes []string
	for _, s := range strings.Split(o.rateClasses, ",") {
		if s = strings.TrimSpace(s); s != "" {
			classes = append(classes, s)
		}
	}
	log := slog.New(slog.NewTextHandler(c.stderr, nil))
	h, err := dashboard.New(rdb, &dashboard.Config{Namespace: c.namespace, AllowActions: o.allowActions,
		RateClasses: classes, RequestTimeout: c.timeout, Logger: log})
	if err != nil {
		_ = ln.Close()
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	mode := "read-only"
	if o.allowActions {
		mode = "actions allowed from loopback clients"
	}
	fmt.Fprintf(c.stdout, "dashboard of namespace %s on http://%s/ (%s)\n", c.namespace, ln.Addr(), mode)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
