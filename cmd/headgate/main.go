// Command headgate inspects and steers the job queues of a headgate namespace on Redis.
//
// Usage:
//
//	headgate [-redis URL] [-namespace NS] [-timeout D] <command> [flags] [args]
//
// Commands:
//
//	stats [-json]
//	      queues: counts by state, unfinished depth, limit, paused
//	jobs -state S [-queue Q] [-kind K] [-partition P] [-tag T] [-fingerprint F] [-older-than D] [-oldest|-newest] [-limit N] [-cursor C] [-json]
//	      list jobs, a page at a time
//	job ID [-json]
//	      one job: fields, payload, progress, output, result, errors
//	cancel ID... [-json] | -state S [-queue Q] [-kind K] [-partition P] [-tag T] [-fingerprint F] [-older-than D] [-dry-run] [-cursor C] [-json]
//	      cancel unfinished jobs, by id or by filter
//	release ID...
//	      let staged (pending) jobs run
//	pause QUEUE [-create]
//	      stop admission from a queue (enqueues continue)
//	resume QUEUE [-create]
//	      restart admission from a paused queue
//	limit QUEUE N|off [-create]
//	      bound a queue's unfinished jobs, or lift the bound
//	rate CLASS [-json] | CLASS LIMIT WINDOW BURST | CLASS off
//	      show a rate class, or set its token bucket: LIMIT per WINDOW (e.g. 1s, 1m), holding BURST
//	quarantine [release FINGERPRINT [-retry]] [-json]
//	      list quarantined fingerprints, or release one (-retry: and retry its job)
//	retry ID... [-at TIME] [-keep-attempts] [-payload JSON] [-priority N] [-max-attempts N] [-set-partition P] [-tags a,b] [-json] | -state S [-queue Q] [-kind K] [-partition P] [-tag T] [-fingerprint F] [-older-than D] [-keep-attempts] [-dry-run] [-cursor C] [-json]
//	      run finished jobs again, by id or by filter
//	edit ID [-payload JSON] [-priority N] [-max-attempts N] [-at TIME] [-partition P] [-tags a,b] [-json]
//	      change -payload, -priority, -max-attempts, -at, -partition, -tags of a waiting job
//	delete ID... [-json] | -state S [-queue Q] [-kind K] [-partition P] [-tag T] [-fingerprint F] [-older-than D] [-dry-run] [-cursor C] [-json]
//	      delete jobs that are not running, by id or by filter (a tenant: -partition P)
//	corrupt [-json]
//	      list the jobs parked because their data could not be used
//	why ID [-json] [-quantum N]
//	      why a job, or else a workflow, is not running now: every reason, with its numbers
//	workers [-json]
//	      the workers' heartbeats: queues, kinds, in flight, last seen, live or not
//	policy [show [-json] | set FIELD VALUE...]
//	      the namespace's fleet-wide policy: backoff, crash limit, retention, snooze limit
//	cron list | add NAME (-cron EXPR [-zone ZONE] | -every D [-start TIME]) -kind K [-queue Q] [-partition P] [-priority N] [-max-attempts N] [-payload JSON] [-tags a,b] [-unique KEY] [-unique-window D] [-retention D] [-misfire skip|fire_once|catch_up] [-grace D] [-catch-up-max N] [-catch-up-window D] | update NAME [the flags of add] | pause|resume|remove|run-now NAME [-json]
//	      the namespace's schedules: list, add, update, pause, resume, remove, run one now
//	tenants QUEUE [-offset N] [-limit N] [-json]
//	      a queue's partitions with waiting work in turn order: backlog, running, share of running, waits
//	dashboard [-addr HOST:PORT] [-allow-actions] [-rate-classes A,B]
//	      serve the web dashboard
//	demo [flags]
//	      run a self-contained demo on an embedded Redis
//	acl [USER [PASSWORD]]
//	      print the ACL SETUSER line of a least-privilege Redis user for the namespace (USER defaults to hg-NS, PASSWORD to a random one)
//	functions [load|prune] [-json]
//	      list headgate's Redis Function libraries (current: of this build); load this build's, for ACL users who may not; prune other builds'
//	wf list [-status S] [-type T] [-limit N] [-after CURSOR] [-tz ZONE] | show ID [-tz ZONE] | signal ID NAME JSON | cancel|pause|resume|terminate ID [-reason R] | retry ID | deployments [-limit N] [-after CURSOR] | drain|activate DEPLOYMENT [-json]
//	      durable workflows: list, show a run's timeline, signal, cancel, pause, resume, terminate, retry; worker deployments, drained and activated
//
// -redis defaults to $REDIS_URL, else redis://127.0.0.1:6379; it takes a redis:// or
// rediss:// URL or host:port; any node of a Redis Cluster reaches the whole cluster.
// -namespace defaults to $HEADGATE_NAMESPACE and is required
// by every command but demo. -timeout bounds each command's calls to Redis (default 10s);
// a run by filter's, each batch.
// Flags may come before or after a command's arguments; a negative number is an argument
// (limit Q -5 is refused as a limit, not taken for a flag). Every command that reads (stats,
// jobs, job, corrupt, quarantine, policy, rate CLASS, tenants) takes -json: one JSON
// document on stdout, with stable snake_case field names and times in RFC 3339 with their
// zone.
// Human output prints times in UTC, marked so.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

func main() {
	// The client logs each failed dial; the command reports the error once itself.
	redis.SetLogger(quietLogger{})
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // the command line was wrong
)

// redisURLDefault is used when neither -redis nor REDIS_URL is set.
const redisURLDefault = "redis://127.0.0.1:6379"

// timeoutDefault bounds a command's calls to Redis unless -timeout says otherwise.
const timeoutDefault = 10 * time.Second

// demoCommand is the slot of the demo subcommand. demo.go fills it in its init with
// runDemo, which receives the arguments after "demo", preceded by -redis and -namespace
// when they were given before the command. Without demo.go the command says it is not
// built in.
var demoCommand func(args []string, stdout, stderr io.Writer) int

// command is one subcommand.
type command struct {
	name    string
	args    string // synopsis of its arguments
	summary string
	// flags registers the command's own flags; nil when it has none.
	flags func(fs *flag.FlagSet, c *cli)
	// run executes the command with its positional arguments.
	run func(ctx context.Context, c *cli, args []string) error
	// offline: the command sends Redis nothing, so the command line asks it nothing
	// either (whether it is a cluster node).
	offline bool
}

// filterSynopsis is the job filter of jobs and of the verbs by filter, besides -state.
const filterSynopsis = "[-queue Q] [-kind K] [-partition P] [-tag T] [-fingerprint F] [-older-than D]"

// commands are the subcommands, in the order help lists them. Each one's args names
// every flag it registers (TestUsageNamesEveryFlag), and the package doc lists the same
// synopses and summaries as help prints (TestPackageDocIsUsage).
var commands = []*command{
	{name: "stats", args: "[-json]", summary: "queues: counts by state, unfinished depth, limit, paused",
		flags: jsonFlag, run: cmdStats},
	{name: "jobs", args: "-state S " + filterSynopsis + " [-oldest|-newest] [-limit N] [-cursor C] [-json]",
		summary: "list jobs, a page at a time", flags: jobsFlags, run: cmdJobs},
	{name: "job", args: "ID [-json]", summary: "one job: fields, payload, progress, output, result, errors",
		flags: jsonFlag, run: cmdJob},
	{name: "cancel", args: "ID... [-json] | -state S " + filterSynopsis + " [-dry-run] [-cursor C] [-json]", summary: "cancel unfinished jobs, by id or by filter", flags: cancelFlags, run: cmdCancel},
	{name: "release", args: "ID...", summary: "let staged (pending) jobs run", run: cmdRelease},
	{name: "pause", args: "QUEUE [-create]", summary: "stop admission from a queue (enqueues continue)",
		flags: pauseFlags, run: cmdPause},
	{name: "resume", args: "QUEUE [-create]", summary: "restart admission from a paused queue", flags: pauseFlags, run: cmdResume},
	{name: "limit", args: "QUEUE N|off [-create]", summary: "bound a queue's unfinished jobs, or lift the bound",
		flags: pauseFlags, run: cmdLimit},
	{name: "rate", args: "CLASS [-json] | CLASS LIMIT WINDOW BURST | CLASS off",
		summary: "show a rate class, or set its token bucket: LIMIT per WINDOW (e.g. 1s, 1m), holding BURST",
		flags:   jsonFlag, run: cmdRate},
	{name: "quarantine", args: "[release FINGERPRINT [-retry]] [-json]",
		summary: "list quarantined fingerprints, or release one (-retry: and retry its job)",
		flags:   quarantineFlags, run: cmdQuarantineRelease},
	{name: "retry", args: "ID... [-at TIME] [-keep-attempts] [-payload JSON] [-priority N] [-max-attempts N] [-set-partition P] [-tags a,b] [-json]" +
		" | -state S " + filterSynopsis + " [-keep-attempts] [-dry-run] [-cursor C] [-json]", summary: "run finished jobs again, by id or by filter",
		flags: retryFlags, run: cmdRetry},
	{name: "edit", args: "ID [-payload JSON] [-priority N] [-max-attempts N] [-at TIME] [-partition P] [-tags a,b] [-json]",
		summary: "change -payload, -priority, -max-attempts, -at, -partition, -tags of a waiting job",
		flags:   editFlags, run: cmdEdit},
	{name: "delete", args: "ID... [-json] | -state S " + filterSynopsis + " [-dry-run] [-cursor C] [-json]", summary: "delete jobs that are not running, by id or by filter (a tenant: -partition P)", flags: deleteFlags, run: cmdDelete},
	{name: "corrupt", args: "[-json]", summary: "list the jobs parked because their data could not be used", flags: jsonFlag, run: cmdCorrupt},
	{name: "why", args: "ID [-json] [-quantum N]", summary: "why a job, or else a workflow, is not running now: every reason, with its numbers", flags: whyFlags, run: cmdWhy},
	{name: "workers", args: "[-json]", summary: "the workers' heartbeats: queues, kinds, in flight, last seen, live or not", flags: workersFlags, run: cmdWorkers},
	{name: "policy", args: "[show [-json] | set FIELD VALUE...]",
		summary: "the namespace's fleet-wide policy: backoff, crash limit, retention, snooze limit", flags: policyFlags, run: cmdPolicy},
	{name: "cron", args: "list | add NAME (-cron EXPR [-zone ZONE] | -every D [-start TIME]) -kind K [-queue Q] [-partition P] [-priority N]" +
		" [-max-attempts N] [-payload JSON] [-tags a,b] [-unique KEY] [-unique-window D] [-retention D] [-misfire skip|fire_once|catch_up]" +
		" [-grace D] [-catch-up-max N] [-catch-up-window D] | update NAME [the flags of add] | pause|resume|remove|run-now NAME [-json]",
		summary: "the namespace's schedules: list, add, update, pause, resume, remove, run one now", flags: cronFlags, run: cmdCron},
	{name: "tenants", args: "QUEUE [-offset N] [-limit N] [-json]",
		summary: "a queue's partitions with waiting work in turn order: backlog, running, share of running, waits", flags: tenantsFlags, run: cmdTenants},
	{name: "dashboard", args: "[-addr HOST:PORT] [-allow-actions] [-rate-classes A,B]", summary: "serve the web dashboard", flags: dashboardFlagSet, run: cmdDashboard},
	{name: "demo", args: "[flags]", summary: "run a self-contained demo on an embedded Redis"},
	aclCommand,
	functionsCommand,
	wfCommand,
}

// cli is one invocation: its output, its global flags and, once connected, its inspector.
type cli struct {
	stdout, stderr io.Writer
	redisURL       string
	namespace      string
	timeout        time.Duration
	addr           string   // the Redis address, once connected
	jobs           jobsOpts // flags of the jobs command
	verbs          verbOpts // flags of the operator verbs (verbs.go)
	create         bool     // pause and resume -create (pause.go)
	why            whyOpts  // flags of why and workers (why.go)
	wf             wfOpts   // flags of the wf command (wf.go)
	bulk           bulkOpts // flags of the verbs by filter (bulk.go)

	insp *inspector.Inspector
	rdb  redis.UniversalClient // the connection, for what spans namespaces (functions.go)

	tenants tenantsOpts // flags of the tenants command (tenants.go)
}

// usageError is a command line mistake: run prints it with the usage and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// commandLine begins a command line that the command prints for the operator to run
// next (the next page, the resume of a run by filter) with the namespace it ran in: a
// cursor is a position among one namespace's jobs, and the line run without it would
// read $HEADGATE_NAMESPACE's, or no namespace at all.
func (c *cli) commandLine(cmd string) string {
	return "headgate -namespace " + shellArg(c.namespace) + " " + cmd
}

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

func (c *cli) globalFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.redisURL, "redis", c.redisURL, "Redis `URL`: redis://, rediss:// or host:port ($REDIS_URL)")
	fs.StringVar(&c.namespace, "namespace", c.namespace, "headgate `namespace` ($HEADGATE_NAMESPACE)")
	fs.DurationVar(&c.timeout, "timeout", c.timeout, "how long a command waits for Redis (a run by filter: for each batch)")
}

// run runs the command line args (without the program name) and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	c := &cli{
		stdout:    stdout,
		stderr:    stderr,
		redisURL:  cmp.Or(os.Getenv("REDIS_URL"), redisURLDefault),
		namespace: os.Getenv("HEADGATE_NAMESPACE"),
		timeout:   timeoutDefault,
	}
	fs := flag.NewFlagSet("headgate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.globalFlags(fs)
	fs.Usage = func() { c.usage(fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() == 0 {
		c.usage(fs)
		return exitUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
		c.usage(fs)
		return exitOK
	}
	i := slices.IndexFunc(commands, func(cmd *command) bool { return cmd.name == name })
	if i < 0 {
		fmt.Fprintf(stderr, "headgate: unknown command %q\n\n", name)
		c.usage(fs)
		return exitUsage
	}
	cmd := commands[i]
	if cmd.name == "demo" {
		return c.demo(fs, rest)
	}

	sub := flag.NewFlagSet("headgate "+cmd.name, flag.ContinueOnError)
	sub.SetOutput(stderr)
	c.globalFlags(sub)
	if cmd.flags != nil {
		cmd.flags(sub, c)
	}
	sub.Usage = func() {
		fmt.Fprintf(stderr, "usage: headgate %s %s\n\n%s.\n\nflags:\n", cmd.name, cmd.args, cmd.summary)
		sub.PrintDefaults()
	}
	pos, err := parseInterleaved(sub, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if c.namespace == "" {
		fmt.Fprintln(stderr, "headgate: no namespace: pass -namespace NS or set HEADGATE_NAMESPACE")
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if c.timeout <= 0 {
		fmt.Fprintf(stderr, "headgate: -timeout must be positive, not %s\n", c.timeout)
		return exitUsage
	}
	node, err := c.connect()
	if err != nil {
		fmt.Fprintln(stderr, c.errorLine(err))
		return exitUsage
	}
	defer node.Close()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rdb redis.UniversalClient = node
	if !cmd.offline {
		if rdb = clusterOf(ctx, node); rdb != node {
			defer rdb.Close()
		}
	}
	c.rdb = rdb
	// The inspector's one line per operator write goes to the command's stderr, its time
	// in RFC 3339 with its zone like every time the command prints (slog.Default's
	// handler writes the host's local time with no zone).
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if c.insp, err = inspector.New(rdb, &inspector.Config{Namespace: c.namespace, Logger: logger}); err != nil {
		fmt.Fprintln(stderr, c.errorLine(err))
		return exitUsage
	}

	err = cmd.run(ctx, c, pos)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "headgate %s: %s\n", cmd.name, ue.msg)
		sub.Usage()
		return exitUsage
	default:
		msg := c.errorLine(err)
		for _, a := range pos {
			if len(a) > maxQuoted { // an id the store's error quotes whole
				msg = strings.ReplaceAll(msg, a, short(a))
			}
		}
		fmt.Fprintln(stderr, msg)
		return exitError
	}
}

// errorLine is the one line the command prints for err: prefixed "headgate: " once
// (library errors already start so), and naming the Redis address when Redis did not
// answer: that it could not be connected to (refused, no route, a name that does not
// resolve: the dial's error says which), that it did not answer within -timeout, or
// that it dropped the connection.
func (c *cli) errorLine(err error) string {
	msg := err.Error()
	if c.addr != "" {
		switch {
		case timedOut(err):
			msg = fmt.Sprintf("Redis at %s did not answer (-timeout %s): %s", c.addr, c.timeout, msg)
		case dialFailed(err):
			msg = fmt.Sprintf("cannot connect to Redis at %s: %s", c.addr, msg)
		case unreachable(err):
			msg = fmt.Sprintf("Redis at %s dropped the connection: %s", c.addr, msg)
		}
	}
	// Redis's NOPERM says what was refused, not why: the usual causes are a
	// least-privilege user given another namespace and an administrator's command.
	// NOAUTH and WRONGPASS do not say where the credentials go.
	switch {
	case strings.Contains(msg, "NOAUTH"):
		msg += " (Redis wants a password: give it in the URL, -redis redis://:PASSWORD@HOST:PORT or redis://USER:PASSWORD@HOST:PORT, or in $REDIS_URL)"
	case strings.Contains(msg, "WRONGPASS"):
		msg += " (the user or password in the -redis URL or $REDIS_URL is wrong: redis://USER:PASSWORD@HOST:PORT)"
	case strings.Contains(msg, "NOPERM") && strings.Contains(msg, "keys"):
		msg += fmt.Sprintf(" (the Redis user may not reach namespace %s: a user of headgate acl reaches one namespace's keys; is -namespace right?)",
			c.namespace)
	case strings.Contains(msg, "NOPERM") && strings.Contains(msg, "command"):
		msg += " (the Redis user may not run that command: headgate functions needs an administrator; otherwise compare the user's ACL with headgate acl's line)"
	case strings.Contains(msg, "READONLY"):
		msg += " (-redis names a replica: point it at the master)"
	case errors.Is(err, headgate.ErrOutOfMemory):
		msg += " (raise the server's maxmemory, or free memory on it; the command writes nothing until then)"
	}
	if !strings.HasPrefix(msg, "headgate: ") && !strings.HasPrefix(msg, "headgate ") {
		msg = "headgate: " + msg
	}
	return msg
}

// unreachable tells an error of a Redis that did not answer (refused, dropped or timed
// out) from one it answered with.
func unreachable(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// timedOut tells an error of a call that ran out of time (-timeout, or a dial or read
// deadline) from one that failed at once.
func timedOut(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}

// dialFailed tells an error of a connection that could not be made (refused, no route
// to the host, a name that does not resolve) from one of a connection made.
func dialFailed(err error) bool {
	var opErr *net.OpError
	return errors.As(err, new(*net.DNSError)) || (errors.As(err, &opErr) && opErr.Op == "dial") ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// maxQuoted bounds a value the user passed (a job id) when a message repeats it.
const maxQuoted = 200

// short is s cut to its first 200 bytes, marked with its full length, for messages.
func short(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:maxQuoted], len(s))
}

// demo hands the demo command its arguments, after the global flags given before it.
func (c *cli) demo(fs *flag.FlagSet, args []string) int {
	if demoCommand == nil {
		fmt.Fprintln(c.stderr, "headgate: the demo is not built into this binary")
		return exitUsage
	}
	var global []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "timeout" { // the demo runs until it is done
			global = append(global, "-"+f.Name, f.Value.String())
		}
	})
	return demoCommand(append(global, args...), c.stdout, c.stderr)
}

// connect opens a client for c.redisURL: a redis:// or rediss:// URL, or host:port.
func (c *cli) connect() (*redis.Client, error) {
	u := c.redisURL
	if !strings.Contains(u, "://") {
		u = "redis://" + u
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		// The URL's password stays out of the message: it goes to terminals and logs.
		return nil, fmt.Errorf("bad -redis %q: %s", short(redactURL(c.redisURL)), redactURL(err.Error()))
	}
	c.addr = opts.Addr
	// -timeout bounds the whole command through its context; go-redis honours a
	// context's deadline on reads and writes only when told to. It bounds each call too,
	// for a run by filter, whose context has no deadline (cmdBulk), and so that a call
	// may take as long as -timeout allows (the client's own default is 3s).
	opts.ContextTimeoutEnabled = true
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = c.timeout, c.timeout, c.timeout
	return redis.NewClient(opts), nil
}

// urlPassword is the password of a redis:// or rediss:// URL (redis://[USER]:PASSWORD@...),
// wherever such a URL appears in a text.
var urlPassword = regexp.MustCompile(`(rediss?://[^:@/\s"]*:)[^@\s"]*@`)

// redactURL replaces the password of every Redis URL in s with xxxxx, as
// net/url.URL.Redacted does, so that a URL the command prints (the demo's server, an
// error about the URL) does not show it.
func redactURL(s string) string {
	return urlPassword.ReplaceAllString(s, "${1}xxxxx@")
}

// clusterOf returns a client of node's Redis Cluster when node is a cluster node (INFO
// cluster says cluster_enabled:1), with node's credentials, TLS and timeouts, and node
// itself otherwise (or when it does not answer: the command's own call reports that). A
// namespace lives on the master of its slot, which need not be the node -redis names,
// and a client of one node gets MOVED for every slot of another.
func clusterOf(ctx context.Context, node *redis.Client) redis.UniversalClient {
	info, err := node.Info(ctx, "cluster").Result()
	if err != nil || !strings.Contains(info, "cluster_enabled:1") {
		return node
	}
	o := node.Options()
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{o.Addr}, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
	})
}

// parseInterleaved parses fs over args, letting flags come after positional arguments
// too ("headgate job ID -namespace x"); "--" ends the flags. A negative number where a
// flag could start ("limit q -5", "wf signal ID NAME -1") is a positional argument, for
// the command to judge: no flag is named by digits.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		i := negativeArg(fs, args)
		if err := fs.Parse(args[:i]); err != nil {
			return nil, err
		}
		consumed := i - len(fs.Args())
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, args[consumed:]...), nil
		}
		if consumed == len(args) {
			return pos, nil
		}
		pos = append(pos, args[consumed]) // an argument, or the negative number at i
		args = args[consumed+1:]
	}
}

// negativeArg returns the index of the first argument in args that is a negative number
// where a flag could start (not the value of the flag before it), or len(args).
func negativeArg(fs *flag.FlagSet, args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return len(args) // the rest are arguments, the negative numbers among them too
		case len(a) > 1 && a[0] == '-' && ('0' <= a[1] && a[1] <= '9' || a[1] == '.'):
			return i
		case len(a) > 1 && a[0] == '-' && !strings.Contains(a, "="):
			if f := fs.Lookup(strings.TrimPrefix(a[1:], "-")); f != nil {
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
					i++ // its value follows, whatever it looks like
				}
			}
		}
	}
	return len(args)
}

func (c *cli) usage(fs *flag.FlagSet) {
	w := c.stderr
	fmt.Fprintln(w, "usage: headgate [-redis URL] [-namespace NS] [-timeout D] <command> [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	// The synopsis on its line and the summary indented below it, as go help does: a
	// column of synopses would be as wide as the longest (cron's, jobs').
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %s\n", strings.TrimSpace(cmd.name+" "+cmd.args))
		fmt.Fprintf(w, "        %s\n", cmd.summary)
	}
	fmt.Fprintln(w, "\nglobal flags:")
	fs.PrintDefaults()
}
