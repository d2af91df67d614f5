// Command headgate-metrics serves the Prometheus metrics of headgate namespaces: the
// state the Collector reads at each scrape (jobs by queue and state, pauses, limits,
// quarantined fingerprints, rate-class tokens), on /metrics.
//
//	headgate-metrics -redis 127.0.0.1:6379 -namespace shop -addr :9187 -rate-classes api,smtp
//
// -namespace takes a comma-separated list to serve several namespaces from one process
// (their series differ by the namespace label). -cluster treats -redis as a
// comma-separated list of cluster nodes. The command lives beside the adapter, in a
// module of its own, so that the headgate command does not depend on Prometheus. Worker
// instruments (attempts, run and wait times) are exported by the workers' own
// processes, with headgateprom.Metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	headgateprom "github.com/headgate/headgate/contrib/prometheus"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	if err != nil && !errors.Is(err, flag.ErrHelp) && !errors.As(err, new(*flagError)) {
		fmt.Fprintln(os.Stderr, "headgate-metrics:", err) // the flag package printed its own
	}
	os.Exit(exitCode(err))
}

// Exit codes, as the headgate command's: 0 when the command ran (or -h printed its
// usage), 1 when it failed, 2 when its command line was wrong.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a command line the command cannot run: a flag missing or of a bad value.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// flagError is the flag package's refusal of the command line, which it printed with
// the usage already.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// exitCode is the exit code of run's error.
func exitCode(err error) int {
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, new(*usageError)) || errors.As(err, new(*flagError)):
		return exitUsage
	}
	return exitError
}

// run parses args and serves until ctx ends. When ready is set, it receives the address
// listened on.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("headgate-metrics", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr       = fs.String("addr", ":9187", "address to serve /metrics on")
		redisAddr  = fs.String("redis", "127.0.0.1:6379", "Redis host:port, or a redis:// or rediss:// URL (with -cluster: comma-separated nodes)")
		cluster    = fs.Bool("cluster", false, "connect to a Redis Cluster")
		namespaces = fs.String("namespace", "", "namespaces to export, comma-separated (required)")
		classes    = fs.String("rate-classes", "", "rate classes whose tokens to export, comma-separated")
		timeout    = fs.Duration("scrape-timeout", headgateprom.ScrapeTimeoutDefault, "bound on the Redis reads of one scrape")
		partitions = fs.Int("partitions", headgateprom.PartitionsPerQueueDefault,
			"partitions per queue whose wait to export, in admission order (-1: none)")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &flagError{err}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected arguments %q: every setting is a flag", fs.Args())}
	}
	if *namespaces == "" {
		return &usageError{"-namespace is required"}
	}
	rdb, err := client(*redisAddr, *cluster)
	if err != nil {
		return err
	}
	defer rdb.Close()

	reg := prometheus.NewRegistry()
	for _, ns := range split(*namespaces) {
		c, err := headgateprom.NewCollector(rdb, &headgateprom.CollectorConfig{Namespace: ns,
			RateClasses: split(*classes), ScrapeTimeout: *timeout, PartitionsPerQueue: *partitions})
		if err != nil {
			return err
		}
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("namespace %q: %w", ns, err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// client connects to -redis: a host:port, or a redis:// or rediss:// URL with the user,
// password, database and TLS of a server that asks for them, as the headgate command's
// -redis; with -cluster, a comma-separated list of nodes, each one or the other (the
// user, password and TLS are the first URL's).
func client(addr string, cluster bool) (redis.UniversalClient, error) {
	parse := func(a string) (*redis.Options, error) {
		if !strings.Contains(a, "://") {
			return &redis.Options{Addr: a}, nil
		}
		o, err := redis.ParseURL(a)
		if err != nil {
			// The parser's error may quote the URL whole, password included.
			return nil, &usageError{fmt.Sprintf("bad -redis %q: %v", redact(a), urlPassword.ReplaceAllString(err.Error(), "${1}xxxxx@"))}
		}
		return o, nil
	}
	if !cluster {
		o, err := parse(addr)
		if err != nil {
			return nil, err
		}
		return redis.NewClient(o), nil
	}
	var co redis.ClusterOptions
	for i, a := range split(addr) {
		o, err := parse(a)
		if err != nil {
			return nil, err
		}
		co.Addrs = append(co.Addrs, o.Addr)
		if i == 0 {
			co.Username, co.Password, co.TLSConfig = o.Username, o.Password, o.TLSConfig
		}
	}
	return redis.NewClusterClient(&co), nil
}

// urlPassword is the password of a redis:// or rediss:// URL (redis://[USER]:PASSWORD@...),
// wherever such a URL appears in a text.
var urlPassword = regexp.MustCompile(`(rediss?://[^:@/\s"]*:)[^@\s"]*@`)

// redact is a -redis value with its password, if any, left out of a message.
func redact(a string) string {
	u, err := url.Parse(a)
	if err != nil || u.User == nil {
		if i := strings.LastIndex(a, "@"); i >= 0 {
			return "…" + a[i:]
		}
		return a
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
