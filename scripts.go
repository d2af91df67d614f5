package headgate

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/headgate/headgate/internal/reroute"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Reply codes of the scripts (lua/lib.lua), translated by replyError.
const (
	replyOK             = 0
	replyIDConflict     = -1
	replyDuplicate      = -2
	replyQuarantined    = -3
	replyBackpressure   = -4
	replyLeaseRejected  = -5
	replyNotFound       = -7
	replyNotCancellable = -8
	replyCorrupt        = -9
	replyNotRetryable   = -10
	replyJobRunning     = -11
	replyNotEditable    = -12
	replyTooManyKinds   = -13
)

// Reply codes of the workflow store's scripts (lua/lib.lua, -20 and below).
const (
	replySequenceConflict = -20
	replyUndecodable      = -21
	replyWorkflowNotFound = -22
	replyWorkflowClosed   = -23
	replyStepNotPending   = -24
	replyVersionDraining  = -25
	replyVersionQueue     = -26
)

// Reply codes of the schedule scripts (lua/lib.lua, -30 and below).
const (
	replyScheduleNotFound = -30
	replyScheduleExists   = -31
	replyScheduleMoved    = -32
	replyDutyLost         = -33
)

// script is one transition: the lib.lua definitions it includes, then lua/<name>.lua,
// run as one Redis Function call (FCALL) or as one EVAL (functions.go).
type script struct {
	name string
	src  string   // the EVAL form
	sha  string   // its SHA1, for EVALSHA
	fn   function // the Redis Function form
}

// Hash returns the SHA1 of the EVAL form.
func (sc script) Hash() string { return sc.sha }

// lib is lua/lib.lua, parsed once.
var lib = mustParseLib()

func mustParseLib() *luaLib {
	src, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	l, err := parseLib(libSource(string(src)))
	if err != nil {
		panic(err)
	}
	return l
}

// loadScript assembles a script. A script that includes a name lib.lua does not define
// is a programming error, caught by every test run: it panics.
func loadScript(name string) script {
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	src, err := lib.assemble(name, string(body))
	if err != nil {
		panic(err)
	}
	fn, err := lib.function(name, string(body))
	if err != nil {
		panic(err)
	}
	sum := sha1.Sum([]byte(src))
	return script{name: name, src: src, sha: hex.EncodeToString(sum[:]), fn: fn}
}

// libDef is one top-level definition of lua/lib.lua with the comment above it.
type libDef struct {
	names    []string // what it defines
	includes []string // the definitions it uses, from its "--- @include" lines
	text     string
	code     string // text without the comment: from "local" or "function" on
	value    bool   // "local x = ...": a value, not a function
}

// luaLib is lua/lib.lua split into its definitions, in file order.
type luaLib struct {
	defs    []libDef
	defined map[string]int // name -> index in defs
}

var (
	luaDefinition = regexp.MustCompile(`^(?:local function ([A-Za-z_]\w*)|function ([A-Za-z_]\w*\.\w+)|local ([A-Za-z_][\w, ]*?)\s*=)`)
	luaInclude    = regexp.MustCompile(`^--- @include (\S+)\s*$`)
)

// parseLib splits lib.lua into its top-level definitions: a definition starts at a line
// in column 0 that begins with "local" or "function"; comment lines in column 0 belong to
// the definition below them, and its "--- @include" lines among them name what it uses.
func parseLib(src string) (*luaLib, error) {
	_, src, _ = strings.Cut(src, "]]\n") // the header
	l := &luaLib{defined: map[string]int{}}
	var comments []string
	var includes []string
	for line := range strings.Lines(src) {
		switch m := luaDefinition.FindStringSubmatch(line); {
		case m != nil:
			d := libDef{text: strings.Join(comments, "") + line, code: line, value: m[3] != "", includes: includes}
			for _, names := range m[1:] {
				for n := range strings.SplitSeq(names, ",") {
					if n = strings.TrimSpace(n); n != "" {
						d.names = append(d.names, n)
					}
				}
			}
			for _, n := range d.names {
				if _, dup := l.defined[n]; dup {
					return nil, fmt.Errorf("lua/lib.lua defines %s twice", n)
				}
				l.defined[n] = len(l.defs)
			}
			l.defs = append(l.defs, d)
			comments, includes = nil, nil
		case strings.HasPrefix(line, "--"):
			if m := luaInclude.FindStringSubmatch(line); m != nil {
				includes = append(includes, m[1])
			} else if strings.Contains(line, "@include") {
				return nil, fmt.Errorf("lua/lib.lua: malformed include line %q", strings.TrimSpace(line))
			}
			comments = append(comments, line)
		case len(l.defs) > 0:
			if strings.Contains(line, "@include") {
				return nil, fmt.Errorf("lua/lib.lua: include line %q is not above a definition", strings.TrimSpace(line))
			}
			l.defs[len(l.defs)-1].text += line
			l.defs[len(l.defs)-1].code += line
		}
	}
	for _, d := range l.defs {
		for _, n := range d.includes {
			if _, ok := l.defined[n]; !ok {
				return nil, fmt.Errorf("lua/lib.lua: %s includes %s, which lib.lua does not define", d.names[0], n)
			}
		}
	}
	return l, nil
}

// scriptIncludes returns the names a script includes: its "--- @include" lines, which
// follow the header's closing "]]" directly.
func scriptIncludes(name, body string) ([]string, error) {
	_, rest, ok := strings.Cut(body, "]]\n")
	if !ok {
		return nil, fmt.Errorf("lua/%s.lua has no header", name)
	}
	var includes []string
	for line := range strings.Lines(rest) {
		m := luaInclude.FindStringSubmatch(line)
		if m == nil {
			break
		}
		includes = append(includes, m[1])
		rest = rest[len(line):]
	}
	if strings.Contains(rest, "@include") {
		return nil, fmt.Errorf("lua/%s.lua: an include line is not right after the header", name)
	}
	return includes, nil
}

// closure marks the definitions that includes names, directly or through the includes
// of other definitions.
func (l *luaLib) closure(where string, includes []string) ([]bool, error) {
	in := make([]bool, len(l.defs))
	var visit func(names []string) error
	visit = func(names []string) error {
		for _, n := range names {
			i, ok := l.defined[n]
			if !ok {
				return fmt.Errorf("%s includes %s, which lua/lib.lua does not define", where, n)
			}
			if in[i] {
				continue
			}
			in[i] = true
			if table, _, ok := strings.Cut(n, "."); ok {
				// A field (K.job) is defined in its table.
				if err := visit([]string{table}); err != nil {
					return err
				}
			}
			if err := visit(l.defs[i].includes); err != nil {
				return err
			}
		}
		return nil
	}
	return in, visit(includes)
}

// included marks the definitions a script includes, transitively.
func (l *luaLib) included(name, body string) ([]bool, error) {
	includes, err := scriptIncludes(name, body)
	if err != nil {
		return nil, err
	}
	return l.closure("lua/"+name+".lua", includes)
}

// assemble returns a script's source: the definitions it includes, transitively, in
// lib.lua's order, then the script. Lua runs a script's whole text on every call, so
// leaving out what a script does not include keeps each call cheap.
func (l *luaLib) assemble(name, body string) (string, error) {
	in, err := l.included(name, body)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, d := range l.defs {
		if in[i] {
			b.WriteString(d.text)
		}
	}
	b.WriteString("\n")
	b.WriteString(body)
	return b.String(), nil
}

// checkAllIncluded reports the definitions no script includes, directly or not.
func (l *luaLib) checkAllIncluded(scripts map[string]string) error {
	used := make([]bool, len(l.defs))
	for name, body := range scripts {
		includes, err := scriptIncludes(name, body)
		if err != nil {
			return err
		}
		in, err := l.closure("lua/"+name+".lua", includes)
		if err != nil {
			return err
		}
		for i := range in {
			used[i] = used[i] || in[i]
		}
	}
	var unused []string
	for i, d := range l.defs {
		if !used[i] {
			unused = append(unused, d.names...)
		}
	}
	if len(unused) > 0 {
		return fmt.Errorf("lua/lib.lua: no script includes %s", strings.Join(unused, ", "))
	}
	return nil
}

// The transitions, one script each.
var (
	scriptEnqueue           = loadScript("enqueue")
	scriptAdmit             = loadScript("admit")
	scriptAck               = loadScript("ack")
	scriptRenew             = loadScript("renew")
	scriptCheckpoint        = loadScript("checkpoint")
	scriptReclaim           = loadScript("reclaim")
	scriptPromote           = loadScript("promote")
	scriptEvict             = loadScript("evict")
	scriptClaimDuty         = loadScript("claim_duty")
	scriptReleaseDuty       = loadScript("release_duty")
	scriptWriteOutput       = loadScript("write_output")
	scriptWriteProgress     = loadScript("write_progress")
	scriptCancel            = loadScript("cancel")
	scriptReleasePending    = loadScript("release_pending")
	scriptReleaseQuarantine = loadScript("release_quarantine")
	scriptSetRateLimit      = loadScript("set_rate_limit")
	scriptRetry             = loadScript("retry")
	scriptEdit              = loadScript("edit")
	scriptDelete            = loadScript("delete")
	scriptHeartbeat         = loadScript("heartbeat")
	scriptWhy               = loadScript("why")
	scriptListJobs          = loadScript("list_jobs")
	scriptBulkCancel        = loadScript("bulk_cancel")
	scriptBulkRetry         = loadScript("bulk_retry")
	scriptBulkDelete        = loadScript("bulk_delete")
	scriptRecordSeries      = loadScript("record_series")
)

// The workflow store's transitions, one script each.
var (
	scriptWfAppend           = loadScript("wf_append")
	scriptWfScheduleTimer    = loadScript("wf_schedule_timer")
	scriptWfRetireTimer      = loadScript("wf_retire_timer")
	scriptWfExpiredTimers    = loadScript("wf_expired_timers")
	scriptWfRecordVisibility = loadScript("wf_record_visibility")
	scriptWfRemoveVisibility = loadScript("wf_remove_visibility")

	scriptWfRegisterNamespace     = loadScript("wf_register_namespace")
	scriptWfPutNamespace          = loadScript("wf_put_namespace")
	scriptWfSetNamespacePlacement = loadScript("wf_set_namespace_placement")
	scriptWfDeprecateNamespace    = loadScript("wf_deprecate_namespace")

	scriptWfPutPackage      = loadScript("wf_put_package")
	scriptWfDeletePackage   = loadScript("wf_delete_package")
	scriptWfPutPackageRoute = loadScript("wf_put_package_route")

	scriptWfPutWorkerDeployment      = loadScript("wf_put_worker_deployment")
	scriptWfSetDesiredState          = loadScript("wf_set_desired_state")
	scriptWfDeleteWorkerDeployment   = loadScript("wf_delete_worker_deployment")
	scriptWfWriteRawWorkerDeployment = loadScript("wf_write_raw_worker_deployment")

	scriptWfPutWorkloop        = loadScript("wf_put_workloop")
	scriptWfRemoveWorkloop     = loadScript("wf_remove_workloop")
	scriptWfPutInvariantRecord = loadScript("wf_put_invariant_record")
)

// The workflow runtime's transitions, one script each.
var (
	scriptWfStart      = loadScript("wf_start")
	scriptWfSignal     = loadScript("wf_signal")
	scriptWfCommitTask = loadScript("wf_commit_task")
	scriptWfFireTimers = loadScript("wf_fire_timers")
	scriptWfPause      = loadScript("wf_pause")
	scriptWfResume     = loadScript("wf_resume")
	scriptWfTerminate  = loadScript("wf_terminate")
	scriptWfRetry      = loadScript("wf_retry")
	scriptWfCommitStep = loadScript("wf_commit_step")
)

// The schedule transitions, one script each.
var (
	scriptPutSchedule    = loadScript("put_schedule")
	scriptPauseSchedule  = loadScript("pause_schedule")
	scriptRemoveSchedule = loadScript("remove_schedule")
	scriptFireSchedule   = loadScript("fire_schedule")
	scriptRunSchedule    = loadScript("run_schedule")
)

// run executes a script (functions.go: FCALL, or EVALSHA and EVAL) and returns its reply
// after the status code, or the typed error the code stands for.
func (s *Store) run(ctx context.Context, sc script, jobID string, args ...any) ([]any, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	return s.scripts.run(ctx, sc, jobID, args...)
}

// runDurable is run followed, on the same connection, by WAIT for the configured number
// of replicas: Redis replicates asynchronously, and only WAIT tells a producer that a
// write would survive the loss of the master.
func (s *Store) runDurable(ctx context.Context, sc script, args ...any) ([]any, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	node, err := s.node(ctx)
	if err != nil {
		return nil, err
	}
	var wait *redis.Cmd
	cmd := s.scripts.call(ctx, sc, args, func(c []any) *redis.Cmd {
		pipe := node.Pipeline()
		cmd := pipe.Do(ctx, c...)
		wait = pipe.Do(ctx, "WAIT", s.cfg.DurableReplicas, ms(s.cfg.DurableTimeout))
		_, _ = pipe.Exec(ctx) // errors are read from each command
		return cmd
	})
	if cmd.Err() != nil {
		// A MOVED reply to a call on one node never reaches the cluster client's slot
		// map by itself.
		reroute.AfterFailure(s.rdb, cmd.Err())
	}
	reply, err := decodeReply(sc, "", cmd.Val(), cmd.Err())
	if err != nil {
		return nil, err
	}
	acked, err := wait.Int()
	if err != nil {
		return reply, fmt.Errorf("headgate: %s: wait for replicas: %w", sc.name, err)
	}
	if acked < s.cfg.DurableReplicas {
		return reply, &NotDurableError{Replicas: acked, Wanted: s.cfg.DurableReplicas}
	}
	return reply, nil
}

func decodeReply(sc script, jobID string, v any, err error) ([]any, error) {
	if redis.HasErrorPrefix(err, "OOM") {
		// At maxmemory under noeviction Redis refuses a script's first write, and every
		// script checks before it writes: nothing was written.
		return nil, fmt.Errorf("%w: %s refused: %w", ErrOutOfMemory, sc.name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("headgate: %s: %w", sc.name, err)
	}
	reply, ok := v.([]any)
	if !ok || len(reply) == 0 {
		return nil, fmt.Errorf("headgate: %s: unexpected reply %v", sc.name, v)
	}
	code, ok := reply[0].(int64)
	if !ok {
		// Every script reply starts with its integer code; a reply that does not is no
		// success, whatever follows.
		return nil, fmt.Errorf("headgate: %s: unexpected reply %v", sc.name, v)
	}
	if code != replyOK {
		return nil, replyError(sc.name, jobID, code, reply[1:])
	}
	return reply[1:], nil
}

// replyError translates a script's error reply into the typed error it stands for.
func replyError(script, jobID string, code int64, rest []any) error {
	switch code {
	case replyIDConflict:
		return &IDConflictError{JobID: asString(rest, 0)}
	case replyDuplicate:
		return &DuplicateError{ExistingID: asString(rest, 0), Replaced: asInt(rest, 1) == 1,
			State: State(asString(rest, 2)), ScheduledAt: fromMs(asInt(rest, 3))}
	case replyQuarantined:
		return &QuarantinedError{Fingerprint: asString(rest, 0)}
	case replyBackpressure:
		return &BackpressureError{Queue: asString(rest, 0), Limit: asInt(rest, 1), Current: asInt(rest, 2), Incoming: asInt(rest, 3)}
	case replyLeaseRejected:
		return &LeaseRejectedError{JobID: jobID}
	case replyNotFound:
		return fmt.Errorf("%w: %q", ErrJobNotFound, jobID)
	case replyNotCancellable:
		return &NotCancellableError{JobID: jobID, State: State(asString(rest, 0))}
	case replyCorrupt:
		return &CorruptError{Key: asString(rest, 0), Reason: asString(rest, 1)}
	case replyNotRetryable:
		return &NotRetryableError{JobID: jobID, State: State(asString(rest, 0))}
	case replyJobRunning:
		return &JobRunningError{JobID: jobID}
	case replyNotEditable:
		return &NotEditableError{JobID: jobID, State: State(asString(rest, 0))}
	case replyTooManyKinds:
		return invalid("Kind", "is needed: the queue has had %d kinds, more than the %d a listing of all kinds merges",
			asInt(rest, 0), asInt(rest, 1))

	case replySequenceConflict:
		return &SequenceConflictError{WorkflowID: jobID, Expected: asInt(rest, 0), Found: asInt(rest, 1)}
	case replyUndecodable:
		return &UndecodableError{What: asString(rest, 0)}
	case replyWorkflowNotFound:
		return fmt.Errorf("%w: %q", ErrWorkflowNotFound, jobID)
	case replyWorkflowClosed:
		return &WorkflowClosedError{WorkflowID: jobID, Status: WorkflowStatus(asString(rest, 0))}
	case replyStepNotPending:
		return stepNotPending(jobID, asString(rest, 0))
	case replyVersionDraining:
		return &VersionDrainingError{WorkflowID: jobID, Version: asString(rest, 0)}
	case replyVersionQueue:
		return versionQueueError(asString(rest, 0), asString(rest, 1))

	case replyScheduleNotFound:
		return fmt.Errorf("%w: %q", ErrScheduleNotFound, jobID)
	case replyScheduleExists:
		return &ScheduleExistsError{Name: jobID}
	case replyScheduleMoved:
		return &ScheduleMovedError{Name: jobID, Revision: asInt(rest, 0), Mark: fromMs(asInt(rest, 1)), Paused: asInt(rest, 2) == 1}
	case replyDutyLost:
		return ErrDutyLost
	}
	return fmt.Errorf("headgate: %s: unexpected reply code %d %v", script, code, rest)
}

func asString(v []any, i int) string {
	if i >= len(v) {
		return ""
	}
	switch x := v[i].(type) {
	case string:
		return x
	case int64:
		return fmt.Sprint(x)
	}
	return ""
}

func asInt(v []any, i int) int64 {
	if i >= len(v) {
		return 0
	}
	switch x := v[i].(type) {
	case int64:
		return x
	case string:
		// Decimal only: fmt.Sscan would read "010" as octal 8.
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// hashFromReply turns an HGETALL list inside a script reply into a map.
func hashFromReply(v any) map[string]string {
	list, _ := v.([]any)
	h := make(map[string]string, len(list)/2)
	for i := 0; i+1 < len(list); i += 2 {
		h[asString(list, i)] = asString(list, i+1)
	}
	return h
}
