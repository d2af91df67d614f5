package headgate

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The tests here hold Go and Lua to the contracts both sides of a script call rely on:
// the ARGV layout a script's header documents, the reply codes, the outcome names and
// the job hash's fields and defaults. Each compares what one side does with what the
// other does, so that a change to either side alone fails.

// argvLayout is what a script's header says about its ARGV: fixed arguments
// ARGV[1..fixed], then, when group > 0, groups of `group` arguments, counted by
// ARGV[count] (0: as many as there are), then, when detailGroup > 0, detail groups of
// detailGroup arguments counted by ARGV[detailCount] (ack.lua: the acks that have more
// than the common arguments).
type argvLayout struct {
	fixed, count, group      int
	names                    []string // of a group's arguments, as the header lists them
	detailCount, detailGroup int
	detailNames              []string
}

var (
	argvLine       = regexp.MustCompile(`(?m)^ARGV\[(\d+)\]`)
	argvRange      = regexp.MustCompile(`ARGV\[(\d+)\.\.(?:\d+\+)?[a-z]\] ([^\n;]+)`)
	argvGroups     = regexp.MustCompile(`then n (?:groups of(?: (\d+))?|(triples)):`)
	argvGroupCount = regexp.MustCompile(`\((\d+)\); then n groups`)
	argvDetails    = regexp.MustCompile(`;\s+then m detail groups of (\d+):`)
	argvDetailLine = regexp.MustCompile(`(?m)^ARGV\[(\d+)\]\s+detail groups m`)
)

// parseArgv reads the ARGV section of a script header.
func parseArgv(h string) (argvLayout, error) {
	start := strings.Index(h, "\nARGV")
	end := strings.Index(h, "\nReplies")
	if start < 0 || end < start {
		return argvLayout{}, fmt.Errorf("no ARGV section before Replies")
	}
	sec := h[start+1 : end]
	var l argvLayout
	for _, m := range argvLine.FindAllStringSubmatch(sec, -1) {
		n, _ := strconv.Atoi(m[1])
		l.fixed = max(l.fixed, n)
	}
	for line := range strings.SplitSeq(sec, "\n") {
		if m := argvLine.FindStringSubmatch(line); m != nil && strings.Contains(line, "number of ") {
			l.count, _ = strconv.Atoi(m[1])
		}
	}
	if m := argvRange.FindStringSubmatch(sec); m != nil { // ARGV[8..7+m] queue names
		first, _ := strconv.Atoi(m[1])
		if first != l.fixed+1 {
			return l, fmt.Errorf("ARGV[%d..] does not follow ARGV[%d]", first, l.fixed)
		}
		l.group, l.names = 1, []string{strings.TrimSpace(m[2])}
		return l, nil
	}
	m := argvGroups.FindStringSubmatchIndex(sec)
	if m == nil {
		return l, nil
	}
	groups := sec[m[1]:]
	if d := argvDetails.FindStringSubmatchIndex(groups); d != nil {
		c := argvDetailLine.FindStringSubmatch(sec)
		if c == nil {
			return l, fmt.Errorf("detail groups, but no ARGV line says `detail groups m`")
		}
		l.detailCount, _ = strconv.Atoi(c[1])
		l.detailNames = splitTopLevel(groups[d[1]:])
		l.detailGroup = len(l.detailNames)
		if stated, _ := strconv.Atoi(groups[d[2]:d[3]]); stated != l.detailGroup {
			return l, fmt.Errorf("a detail group is said to have %d arguments, the header lists %d: %q", stated, l.detailGroup, l.detailNames)
		}
		groups = groups[:d[0]]
	}
	l.names = splitTopLevel(groups)
	l.group = len(l.names)
	stated := -1
	switch {
	case m[2] >= 0:
		stated, _ = strconv.Atoi(sec[m[2]:m[3]])
	case m[4] >= 0:
		stated = 3
	default:
		if c := argvGroupCount.FindStringSubmatch(sec); c != nil {
			stated, _ = strconv.Atoi(c[1])
		}
	}
	if stated != l.group {
		return l, fmt.Errorf("a group is said to have %d arguments, the header lists %d: %q", stated, l.group, l.names)
	}
	return l, nil
}

// splitTopLevel splits a list of argument descriptions at the commas outside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, from := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.Join(strings.Fields(s[from:i]), " "))
				from = i + 1
			}
		}
	}
	if rest := strings.Join(strings.Fields(s[from:]), " "); rest != "" {
		out = append(out, rest)
	}
	return out
}

var (
	bodyFixed      = regexp.MustCompile(`ARGV\[(\d+)\]`)
	bodyOffset     = regexp.MustCompile(`ARGV\[b \+ (\d+)\]`)
	bodyBase       = regexp.MustCompile(`local b = (\d+) \+ \(i - 1\) \* (F|\d+)`)
	bodyGroupField = regexp.MustCompile(`ARGV\[(\d+) \+ \(i - 1\) \* F \+ (\d+)\]`)
	bodyEach       = regexp.MustCompile(`ARGV\[(\d+) \+ i\]`)
	bodyF          = regexp.MustCompile(`(?m)^local F = (\d+)`)
	bodyDetailBase = regexp.MustCompile(`local d = (\d+) \+ n \* F \+ \(k - 1\) \* D`)
	bodyDetail     = regexp.MustCompile(`ARGV\[d \+ (\d+)\]`)
	bodyD          = regexp.MustCompile(`(?m)^local D = (\d+)`)
)

// checkArgvBody checks that a script body reads its arguments where the header puts
// them: every fixed argument, and every argument of a group at its offset.
func checkArgvBody(t *testing.T, name, body string, l argvLayout) {
	t.Helper()
	code := stripLua(body)
	used := argvNumbers(bodyFixed, code)
	for n := 1; n <= l.fixed; n++ {
		if !used[n] {
			t.Errorf("%s.lua never reads ARGV[%d], which its header documents", name, n)
		}
	}
	for n := range used {
		if n > l.fixed {
			t.Errorf("%s.lua reads ARGV[%d], past the %d fixed arguments of its header", name, n, l.fixed)
		}
	}
	if l.group <= 1 {
		if m := bodyEach.FindStringSubmatch(code); m != nil && m[1] != strconv.Itoa(l.fixed) {
			t.Errorf("%s.lua reads its list after ARGV[%s], its header after ARGV[%d]", name, m[1], l.fixed)
		}
		return
	}
	offsets := argvNumbers(bodyOffset, code)
	for _, m := range bodyGroupField.FindAllStringSubmatch(code, -1) {
		n, _ := strconv.Atoi(m[2])
		offsets[n] = true
		if m[1] != strconv.Itoa(l.fixed) {
			t.Errorf("%s.lua counts groups from ARGV[%s], its header from ARGV[%d]", name, m[1], l.fixed)
		}
	}
	if want := slices.Collect(func(yield func(int) bool) {
		for n := 1; n <= l.group; n++ {
			if !yield(n) {
				return
			}
		}
	}); !slices.Equal(slices.Sorted(maps.Keys(offsets)), want) {
		t.Errorf("%s.lua reads group offsets %v, its header lists %d arguments per group", name, slices.Sorted(maps.Keys(offsets)), l.group)
	}
	m := bodyBase.FindStringSubmatch(code)
	if m == nil {
		t.Errorf("%s.lua: no `local b = <fixed> + (i - 1) * <size>` for its groups", name)
		return
	}
	if m[1] != strconv.Itoa(l.fixed) {
		t.Errorf("%s.lua starts its groups after ARGV[%s], its header after ARGV[%d]", name, m[1], l.fixed)
	}
	size := m[2]
	if size == "F" {
		if f := bodyF.FindStringSubmatch(code); f != nil {
			size = f[1]
		} else {
			size = "" // read from an argument: checked against what Go passes
		}
	}
	if size != "" && size != strconv.Itoa(l.group) {
		t.Errorf("%s.lua takes groups of %s arguments, its header of %d", name, size, l.group)
	}
	checkArgvDetails(t, name, code, l)
}

// argvNumbers is the set of numbers re's first group matches in code (the ARGV indexes
// or offsets a body reads).
func argvNumbers(re *regexp.Regexp, code string) map[int]bool {
	out := map[int]bool{}
	for _, m := range re.FindAllStringSubmatch(code, -1) {
		n, _ := strconv.Atoi(m[1])
		out[n] = true
	}
	return out
}

// checkArgvDetails checks that a script body reads its detail groups where the header
// puts them: after the groups, every argument of a detail group at its offset.
func checkArgvDetails(t *testing.T, name, code string, l argvLayout) {
	t.Helper()
	base := bodyDetailBase.FindStringSubmatch(code)
	if l.detailGroup == 0 {
		if base != nil {
			t.Errorf("%s.lua reads detail groups its header does not document", name)
		}
		return
	}
	if base == nil {
		t.Errorf("%s.lua: no `local d = <fixed> + n * F + (k - 1) * D` for its detail groups", name)
		return
	}
	if base[1] != strconv.Itoa(l.fixed) {
		t.Errorf("%s.lua starts its groups after ARGV[%s], its header after ARGV[%d]", name, base[1], l.fixed)
	}
	if d := bodyD.FindStringSubmatch(code); d == nil || d[1] != strconv.Itoa(l.detailGroup) {
		t.Errorf("%s.lua takes detail groups of %v arguments, its header of %d", name, d, l.detailGroup)
	}
	offsets := argvNumbers(bodyDetail, code)
	for n := 1; n <= l.detailGroup; n++ {
		if !offsets[n] {
			t.Errorf("%s.lua never reads argument %d of a detail group (%s)", name, n, l.detailNames[n-1])
		}
	}
	for n := range offsets {
		if n > l.detailGroup {
			t.Errorf("%s.lua reads argument %d of a detail group, its header lists %d", name, n, l.detailGroup)
		}
	}
}

// argRecorder records the arguments of every script call, by script SHA.
type argRecorder struct {
	mu    sync.Mutex
	calls map[string][][]any
}

func (r *argRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *argRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (r *argRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		if name := strings.ToLower(fmt.Sprint(a[0])); name == "evalsha" || name == "eval" {
			sha := fmt.Sprint(a[1])
			if name == "eval" {
				sum := sha1.Sum([]byte(sha))
				sha = hex.EncodeToString(sum[:])
			}
			nkeys, _ := strconv.Atoi(fmt.Sprint(a[2]))
			r.mu.Lock()
			r.calls[sha] = append(r.calls[sha], a[3+nkeys:])
			r.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// TestLuaArgvMatchesGo holds each script's header ARGV section to its body (which
// arguments it reads, at which offsets) and to its Go caller (how many arguments it
// passes, for batches of two).
func TestLuaArgvMatchesGo(t *testing.T) {
	// The header against the body, before anything runs.
	layouts := map[string]argvLayout{}
	for name, src := range scriptSources(t) {
		if name == "lib" {
			continue
		}
		t.Run("Lua/"+name, func(t *testing.T) {
			h := header(src)
			l, err := parseArgv(h)
			if err != nil {
				t.Fatalf("%s.lua header: %v", name, err)
			}
			checkArgvBody(t, name, src[len(h):], l)
			layouts[name] = l
		})
	}

	// The header against what Go passes.
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	rec := &argRecorder{calls: map[string][][]any{}}
	rdb.AddHook(rec)
	s, err := NewStore(rdb, &StoreConfig{Namespace: "argv"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// Every transition, each batch of two.
	must("freeze", s.FreezeClock(ctx, time.UnixMilli(1_700_000_000_000)))
	_, err = s.Enqueue(ctx, Envelope{ID: "a", Kind: "k"}, Envelope{ID: "b", Kind: "k", Queue: "other", Retention: time.Hour})
	must("enqueue", err)
	claims, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{QueueDefault, "other"}, Capacity: 2, Lease: time.Minute})
	must("admit", err)
	if len(claims) != 2 {
		t.Fatalf("admitted %d jobs, want 2", len(claims))
	}
	l0, l1 := claims[0].LeaseRef(), claims[1].LeaseRef()
	_, err = s.Renew(ctx, []LeaseRef{l0, l1}, time.Minute)
	must("renew", err)
	must("checkpoint", s.Checkpoint(ctx, l0, Checkpoint{InProgress: "step"}))
	_, err = s.WriteOutput(ctx, l0, Blob{SchemaVersion: 1, Bytes: []byte("out")})
	must("write output", err)
	_, err = s.WriteProgress(ctx, l0, Progress{Current: 1, Total: 2})
	must("write progress", err)
	// A plain ack and one with details (ack.lua's detail groups).
	_, err = s.AckMany(ctx, []AckRequest{{Lease: l0, Outcome: OutcomeSuccess}, {Lease: l1, Outcome: OutcomeRetry, Opts: &AckOpts{Error: "boom"}}})
	must("ack", err)
	_, err = s.ReclaimExpired(ctx, 10)
	must("reclaim", err)
	_, _, err = s.PromoteDue(ctx, 10)
	must("promote", err)
	_, err = s.EvictRetained(ctx, 10)
	must("evict", err)
	_, err = s.RecordSeries(ctx, 0) // the two queues
	must("record series", err)
	_, err = s.ClaimDuty(ctx, "duty", "h", time.Minute)
	must("claim duty", err)
	must("release duty", s.ReleaseDuty(ctx, "duty", "h"))
	_, err = s.Enqueue(ctx, Envelope{ID: "p1", Kind: "k", Pending: true}, Envelope{ID: "p2", Kind: "k", Pending: true})
	must("enqueue pending", err)
	_, err = s.ReleasePending(ctx, "p1", "p2")
	must("release pending", err)
	must("cancel", s.Cancel(ctx, "p1"))
	_, err = s.ReleaseQuarantine(ctx, "fp")
	must("release quarantine", err)
	must("set rate limit", s.SetRateLimit(ctx, "c", RateLimit{Limit: 1, Window: time.Second, Burst: 1}))
	p, err := s.Policy(ctx)
	must("policy", err)
	must("set policy", s.SetPolicy(ctx, p))
	// The workflow store's transitions; batches of two.
	must("append", s.Append(ctx, "wf", []Event{{Seq: 1, Kind: EventWorkflowStarted, WorkflowType: "t", RunID: "r"},
		{Seq: 2, Kind: EventStepCompleted, Name: "s"}}, 0))
	must("schedule timer", s.ScheduleTimer(ctx, "wf", "t", time.UnixMilli(1_700_000_000_000), 2))
	_, err = s.ExpiredTimers(ctx, time.Time{}, 10)
	must("expired timers", err)
	_, err = s.RetireTimer(ctx, "wf", "t", time.UnixMilli(1_700_000_000_000), 2)
	must("retire timer", err)
	must("record visibility", s.RecordVisibility(ctx, VisibilityRecord{WorkflowID: "wf", RunID: "r", WorkflowType: "t",
		Status: WorkflowRunning}))
	_, err = s.RemoveVisibility(ctx, "wf", "r")
	must("remove visibility", err)
	must("put package", s.PutPackageWithRoutes(ctx, PackageRecord{WorkflowType: "t", ContentHash: "h"}, []string{"t", "u"}))
	_, err = s.DeletePackage(ctx, "t", "h")
	must("delete package", err)
	must("put package route", s.PutPackageRoute(ctx, "t", "h"))
	_, _, err = s.PutWorkerDeployment(ctx, WorkerDeployment{Name: "d"})
	must("put deployment", err)
	_, err = s.SetDesiredState(ctx, "d", DesiredDraining)
	must("set desired state", err)
	must("write raw deployment", s.WriteRawWorkerDeployment(ctx, "raw", []byte("x")))
	_, _, err = s.DeleteWorkerDeployment(ctx, "d")
	must("delete deployment", err)
	must("put workloop", s.PutWorkloop(ctx, WorkloopRecord{LoopID: "l"}))
	_, err = s.RemoveWorkloop(ctx, "l")
	must("remove workloop", err)
	_, err = s.PutInvariantRecord(ctx, InvariantStateRecord{LoopID: "l", Invariant: "i"}, time.Time{})
	must("put invariant record", err)
	reg, err := NewRegistry(rdb, &RegistryConfig{Scope: "argv"})
	must("registry", err)
	_, err = reg.Register(ctx, "n", NamespaceExplicit)
	must("register namespace", err)
	_, err = reg.Put(ctx, NamespaceRecord{Name: "m", Origin: NamespaceExplicit})
	must("put namespace", err)
	_, err = reg.SetPlacement(ctx, "n", NamespacePlacement{Mode: PlacementUnplaced})
	must("set placement", err)
	must("deprecate namespace", reg.Deprecate(ctx, "n"))
	// The workflow runtime's transitions. Type t is routed to package version h above, so
	// its runs' tasks are on h's task queue.
	wfq := VersionedQueue("wfq", "h")
	_, err = s.StartWorkflow(ctx, WorkflowStart{WorkflowID: "stepper", WorkflowType: "t", RunID: "r", Queue: "wfq"})
	must("start workflow", err)
	stepTasks, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l4", Queues: []string{wfq, "none"}, Capacity: 1, Lease: time.Minute})
	must("admit task", err)
	_, err = s.CommitWorkflowTask(ctx, TaskCommit{WorkflowID: "stepper", Lease: stepTasks[0].LeaseRef(), ExpectedHead: 1, End: true,
		Events:   []Event{{Seq: 2, Kind: EventStepScheduled, Name: "s#1", Attempt: 1, Queue: "steps"}},
		StepJobs: []StepJob{{Step: "s#1", Queue: "steps"}}})
	must("schedule a step job", err)
	stepJobs, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l5", Queues: []string{VersionedQueue("steps", "h")}, Capacity: 1, Lease: time.Minute})
	must("admit step job", err)
	if len(stepJobs) != 1 {
		t.Fatalf("admitted %d step jobs, want 1", len(stepJobs))
	}
	retryAt := time.UnixMilli(1_700_000_100_000)
	_, err = s.CommitWorkflowStep(ctx, StepCommit{WorkflowID: "stepper", RunID: "r", Step: "s#1", Lease: stepJobs[0].LeaseRef(),
		Events: []Event{{Kind: EventStepFailed, Name: "s#1", Attempt: 1, FireAt: retryAt},
			{Kind: EventStepScheduled, Name: "s#1", Attempt: 2, FireAt: retryAt}},
		Retry: &StepJob{Step: "s#1", Queue: VersionedQueue("steps", "h"), RunAt: retryAt}})
	must("commit a step job's failed attempt", err)
	_, err = s.StartWorkflow(ctx, WorkflowStart{WorkflowID: "run", WorkflowType: "t", Queue: "wfq"})
	must("start workflow", err)
	must("signal workflow", s.SignalWorkflow(ctx, "run", "go", []byte("1")))
	_, _, err = s.FireTimers(ctx, 10)
	must("fire timers", err)
	tasks, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l2", Queues: []string{wfq, "none"}, Capacity: 1, Lease: time.Minute})
	must("admit task", err)
	if len(tasks) != 1 {
		t.Fatalf("admitted %d workflow tasks, want 1", len(tasks))
	}
	_, err = s.CommitWorkflowTask(ctx, TaskCommit{WorkflowID: "run", Lease: tasks[0].LeaseRef(), ExpectedHead: 2, End: true,
		Events: []Event{{Seq: 3, Kind: EventStepCompleted, Name: "a#1"}, {Seq: 4, Kind: EventWorkflowCompleted}}})
	must("commit workflow task", err)
	_, err = s.StartWorkflow(ctx, WorkflowStart{WorkflowID: "held", WorkflowType: "t", Queue: "wfq"})
	must("start workflow", err)
	_, err = s.PauseWorkflow(ctx, "held", "why", "op")
	must("pause workflow", err)
	_, err = s.ResumeWorkflow(ctx, "held", "why", "op")
	must("resume workflow", err)
	must("terminate workflow", s.TerminateWorkflow(ctx, "held", "why", "op"))
	_, err = s.StartWorkflow(ctx, WorkflowStart{WorkflowID: "failing", WorkflowType: "t", Queue: "wfq"})
	must("start workflow", err)
	tasks, err = s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l3", Queues: []string{wfq, "none"}, Capacity: 1, Lease: time.Minute})
	must("admit task", err)
	_, err = s.CommitWorkflowTask(ctx, TaskCommit{WorkflowID: "failing", Lease: tasks[0].LeaseRef(), ExpectedHead: 1, End: true,
		Events: []Event{{Seq: 2, Kind: EventStepCompleted, Name: "a#1"},
			{Seq: 3, Kind: EventWorkflowFailed, Error: &WorkflowError{Message: "boom"}}}})
	must("fail workflow", err)
	_, err = s.RetryWorkflow(ctx, "failing")
	must("retry workflow", err)
	must("cancel p2", s.Cancel(ctx, "p2"))
	_, err = s.Retry(ctx, "p2", &RetryOptions{Edit: &JobEdit{Priority: new(int32(3))}})
	must("retry", err)
	_, err = s.Edit(ctx, "p2", JobEdit{Priority: new(int32(4))})
	must("edit", err)
	_, err = s.Delete(ctx, "p2")
	must("delete", err)
	// The schedule transitions; a fire of two ticks.
	_, err = s.AddSchedule(ctx, Schedule{Name: "sc", Cron: "* * * * *", Job: Envelope{Kind: "k"},
		Misfire: Misfire{Policy: MisfireCatchUp, Max: 5, Window: time.Hour}})
	must("add schedule", err)
	_, err = s.UpdateSchedule(ctx, Schedule{Name: "sc", Cron: "* * * * *", Job: Envelope{Kind: "k"},
		Misfire: Misfire{Policy: MisfireCatchUp, Max: 5, Window: time.Hour}})
	must("update schedule", err)
	_, err = s.PauseSchedule(ctx, "sc")
	must("pause schedule", err)
	_, err = s.ResumeSchedule(ctx, "sc")
	must("resume schedule", err)
	_, err = s.RunScheduleNow(ctx, "sc")
	must("run schedule", err)
	must("advance", s.AdvanceClock(ctx, 2*time.Minute))
	lease, err := s.ClaimDutyLease(ctx, "cron", "h", time.Minute)
	must("claim cron duty", err)
	fired, err := s.FireSchedule(ctx, DutyFence{Duty: "cron", Holder: "h", Fence: lease.Fence}, "sc")
	must("fire schedule", err)
	if len(fired) != 2 {
		t.Fatalf("fired %d ticks, want 2", len(fired))
	}
	must("remove schedule", s.RemoveSchedule(ctx, "sc"))
	_, err = s.Heartbeat(ctx, Heartbeat{ID: "w", Queues: []string{QueueDefault, "other"}, Liveness: time.Minute})
	must("heartbeat", err)
	_, err = s.Why(ctx, "b", nil)
	must("why", err)
	_, err = s.ListJobs(ctx, JobFilter{Queue: "default", State: StateAvailable, Partition: "t", Tag: "x"}, Page{})
	must("list jobs", err)
	_, err = s.BulkCancel(ctx, JobFilter{Queue: "default", State: StateAvailable, Partition: "t", Tag: "x"}, nil)
	must("bulk cancel", err)
	_, err = s.BulkRetry(ctx, JobFilter{Queue: "default", State: StateCancelled}, &BulkOptions{DryRun: true})
	must("bulk retry", err)
	_, err = s.BulkDelete(ctx, JobFilter{Queue: "default", State: StateCancelled}, nil)
	must("bulk delete", err)

	scripts := map[string]script{}
	for _, sc := range []script{scriptEnqueue, scriptAdmit, scriptAck, scriptRenew, scriptCheckpoint,
		scriptReclaim, scriptPromote, scriptEvict, scriptClaimDuty, scriptReleaseDuty, scriptWriteOutput,
		scriptWriteProgress, scriptCancel, scriptReleasePending, scriptReleaseQuarantine, scriptSetRateLimit, scriptSetPolicy,
		scriptWfAppend, scriptWfScheduleTimer, scriptWfRetireTimer, scriptWfExpiredTimers, scriptWfRecordVisibility,
		scriptWfRemoveVisibility, scriptWfRegisterNamespace, scriptWfPutNamespace, scriptWfSetNamespacePlacement,
		scriptWfDeprecateNamespace, scriptWfPutPackage, scriptWfDeletePackage, scriptWfPutPackageRoute,
		scriptWfPutWorkerDeployment, scriptWfSetDesiredState, scriptWfDeleteWorkerDeployment,
		scriptWfWriteRawWorkerDeployment, scriptWfPutWorkloop, scriptWfRemoveWorkloop, scriptWfPutInvariantRecord,
		scriptRetry, scriptEdit, scriptDelete, scriptWfStart, scriptWfSignal, scriptWfFireTimers, scriptWfCommitTask,
		scriptWfCommitStep, scriptWfPause, scriptWfResume, scriptWfTerminate, scriptWfRetry, scriptPutSchedule, scriptPauseSchedule, scriptRemoveSchedule,
		scriptFireSchedule, scriptRunSchedule, scriptHeartbeat, scriptWhy,
		scriptListJobs, scriptBulkCancel, scriptBulkRetry, scriptBulkDelete, scriptRecordSeries} {
		scripts[sc.name] = sc
	}
	for name, l := range layouts {
		t.Run("Go/"+name, func(t *testing.T) {
			sc, ok := scripts[name]
			if !ok {
				t.Fatalf("%s.lua: the test does not call it; add it to the list and the calls above", name)
			}
			calls := rec.calls[sc.Hash()]
			if len(calls) == 0 {
				t.Fatalf("%s.lua: the calls above never ran it", name)
			}
			args := calls[len(calls)-1]
			groups := 0
			switch {
			case l.count > 0:
				groups, _ = strconv.Atoi(fmt.Sprint(args[l.count-1]))
				if groups != 2 {
					t.Errorf("%s: Go passes %d as ARGV[%d], the number of groups; the test made 2", name, groups, l.count)
				}
			case l.group > 0:
				groups = (len(args) - l.fixed) / l.group
			}
			details := 0
			if l.detailCount > 0 {
				details, _ = strconv.Atoi(fmt.Sprint(args[l.detailCount-1]))
				if details < 1 || details > groups {
					t.Errorf("%s: Go passes %d as ARGV[%d], the number of detail groups; the test made 1 or 2", name, details, l.detailCount)
				}
			}
			if want := l.fixed + groups*l.group + details*l.detailGroup; len(args) != want {
				t.Errorf("%s: Go passes %d arguments, the header's layout (%d fixed, %d groups of %d, %d detail groups of %d) makes %d",
					name, len(args), l.fixed, groups, l.group, details, l.detailGroup, want)
			}
		})
	}
}

// evalLib returns, from miniredis, what expr evaluates to after the lib.lua definitions
// that includes reach.
func evalLib(t *testing.T, includes []string, expr string) *redis.Cmd {
	t.Helper()
	src, err := lib.assemble("test", "--[[ ]]\n--- @include "+strings.Join(includes, "\n--- @include ")+"\nreturn "+expr+"\n")
	if err != nil {
		t.Fatal(err)
	}
	m := miniredis.RunT(t)
	return redis.NewClient(&redis.Options{Addr: m.Addr()}).Eval(context.Background(), src, nil)
}

// replyCodeName is the lib.lua name of a Go reply constant: replyIDConflict is
// E_ID_CONFLICT, replyOK is OK.
func replyCodeName(goName string) string {
	rest := strings.TrimPrefix(goName, "reply")
	if rest == "OK" {
		return "OK"
	}
	var b strings.Builder
	for i, r := range rest {
		upper := r >= 'A' && r <= 'Z'
		if i > 0 && upper {
			prevLower := rest[i-1] >= 'a' && rest[i-1] <= 'z'
			nextLower := i+1 < len(rest) && rest[i+1] >= 'a' && rest[i+1] <= 'z'
			if prevLower || nextLower {
				b.WriteByte('_')
			}
		}
		b.WriteRune(r)
	}
	return "E_" + strings.ToUpper(b.String())
}

// TestLuaReplyCodesMatchGo holds the reply codes of lib.lua to the reply constants of
// scripts.go, both ways, and checks that replyError translates each error code.
func TestLuaReplyCodesMatchGo(t *testing.T) {
	// The Go side: every reply* constant of scripts.go, with its value.
	f, err := parser.ParseFile(token.NewFileSet(), "scripts.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	goCodes := map[string]int64{} // lib.lua name → value
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			for i, n := range v.Names {
				if !strings.HasPrefix(n.Name, "reply") {
					continue
				}
				lit := v.Values[i]
				text := ""
				switch e := lit.(type) {
				case *ast.BasicLit:
					text = e.Value
				case *ast.UnaryExpr:
					text = e.Op.String() + e.X.(*ast.BasicLit).Value
				}
				val, err := strconv.ParseInt(text, 10, 64)
				if err != nil {
					t.Fatalf("%s is not an integer literal: %v", n.Name, err)
				}
				goCodes[replyCodeName(n.Name)] = val
			}
		}
	}
	// The Lua side: OK and every E_* definition of lib.lua, evaluated.
	var luaNames []string
	for n := range lib.defined {
		if n == "OK" || strings.HasPrefix(n, "E_") {
			luaNames = append(luaNames, n)
		}
	}
	slices.Sort(luaNames)
	vals, err := evalLib(t, luaNames, "{ "+strings.Join(luaNames, ", ")+" }").Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	luaCodes := map[string]int64{}
	for i, n := range luaNames {
		luaCodes[n] = vals[i]
	}
	if !maps.Equal(luaCodes, goCodes) {
		t.Errorf("reply codes differ:\n lib.lua: %v\n     Go: %v", luaCodes, goCodes)
	}
	for name, code := range goCodes {
		if name == "OK" {
			continue
		}
		if err := replyError("s", "id", code, nil); strings.Contains(err.Error(), "unexpected reply code") {
			t.Errorf("replyError does not translate %s (%d)", name, code)
		}
	}
}

var luaKnownOutcomes = regexp.MustCompile(`local known = \{([^}]*)\}`)

// TestLuaOutcomeNamesMatchGo holds the outcomes ack.lua accepts to the outcomes Go acks,
// by the names Go passes.
func TestLuaOutcomeNamesMatchGo(t *testing.T) {
	src := scriptSources(t)["ack"]
	m := luaKnownOutcomes.FindStringSubmatch(src)
	if m == nil {
		t.Fatal("ack.lua has no `local known = { ... }` table of outcomes")
	}
	var lua []string
	for _, entry := range strings.Split(m[1], ",") {
		if name, _, ok := strings.Cut(strings.TrimSpace(entry), " = true"); ok {
			lua = append(lua, name)
		}
	}
	slices.Sort(lua)
	var acked []string
	lease := LeaseRef{JobID: "j", LeaseID: "l", Fence: 1}
	for o, name := range outcomeNames {
		args, _, err := ackArgs("ack", AckRequest{Lease: lease, Outcome: o, Opts: &AckOpts{Delay: time.Second}})
		if err != nil {
			continue // not acked (lease_lost is the reclaimer's)
		}
		if got := fmt.Sprint(args[3]); got != name {
			t.Errorf("ackArgs passes %s as %q, its name is %q", o, got, name)
		}
		acked = append(acked, name)
	}
	slices.Sort(acked)
	if !slices.Equal(lua, acked) {
		t.Errorf("ack.lua accepts %q, Go acks %q", lua, acked)
	}
	h := header(src)
	for _, name := range acked {
		if !strings.Contains(h, name) {
			t.Errorf("ack.lua's header does not list the outcome %s", name)
		}
	}
}

// jobHashFields maps each field of JOB_FIELDS and JOB_DEFAULTS to what jobFromHash makes
// of it, rendered as the hash stores it ("" for a field only the scripts read).
var jobHashFields = map[string]func(j *Job) string{
	"state":   func(j *Job) string { return string(j.State) },
	"queue":   func(j *Job) string { return j.Queue },
	"part":    func(j *Job) string { return j.PartitionKey },
	"sticky":  func(j *Job) string { return j.StickyWorker },
	"prio":    func(j *Job) string { return fmt.Sprint(j.Priority) },
	"sched":   func(j *Job) string { return fmt.Sprint(unixMs(j.ScheduledAt)) },
	"fp":      func(j *Job) string { return j.Fingerprint },
	"ret":     func(j *Job) string { return fmt.Sprint(ms(j.Retention)) },
	"uwin":    func(j *Job) string { return fmt.Sprint(ms(j.UniqueWindow)) },
	"held":    func(j *Job) string { return map[bool]string{true: "1", false: "0"}[j.Held] },
	"attempt": func(j *Job) string { return fmt.Sprint(j.Attempt) },
	"maxa":    func(j *Job) string { return fmt.Sprint(j.MaxAttempts) },
	"crash":   func(j *Job) string { return fmt.Sprint(j.CrashAttempt) },
	"rc":      func(j *Job) string { return j.RateClass },
	"step":    func(j *Job) string { return j.Checkpoint.InProgress },
	"lease":   func(j *Job) string { return j.LeaseID },
	"fence":   func(j *Job) string { return fmt.Sprint(j.Fence) },
	"weight":  func(j *Job) string { return fmt.Sprint(j.Weight) },
	"schema":  func(j *Job) string { return fmt.Sprint(j.SchemaVersion) },
	"ukey":    nil, // scoped by Go (queue \n kind \n key); read back below
	"charge":  nil, // the rate charge of the running attempt: scripts only
	"aux":     nil, // marks keys besides the hash: scripts only
	"parked":  nil, // set aside by its rate class (s: short, u: unrunnable): scripts and QueueStats
	"snz":     func(j *Job) string { return fmt.Sprint(j.Snoozes) },
	"errb":    nil, // the byte size of the error history: scripts only
}

// TestLuaJobFieldsMatchGo holds lib.lua's job fields and defaults to jobFromHash: a
// field the scripts read is the one Go reads, and an absent field reads as the same
// default on both sides.
func TestLuaJobFieldsMatchGo(t *testing.T) {
	tables := []string{"JOB_FIELDS", "JOB_NUMBERS", "JOB_DEFAULTS"}
	out, err := evalLib(t, tables, "cjson.encode({ "+strings.Join(tables, ", ")+" })").Text()
	if err != nil {
		t.Fatal(err)
	}
	var raw [3]json.RawMessage
	var fields []string
	var numbers map[string]bool
	var defaults map[string]any // numbers (JSON float64) and the default queue's name
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for i, v := range []any{&fields, &numbers, &defaults} {
		if err := json.Unmarshal(raw[i], v); err != nil {
			t.Fatalf("%s: %v (%s)", tables[i], err, raw[i])
		}
	}
	all := slices.Concat(fields, slices.Collect(maps.Keys(defaults)))
	for _, f := range all {
		if _, ok := jobHashFields[f]; !ok {
			t.Errorf("lib.lua reads job field %q, which the test does not map to Go; add it to jobHashFields", f)
		}
	}
	// Absent fields: what the scripts read (JOB_DEFAULTS, else 0 for a number, else "")
	// is what Go reads.
	empty := jobFromHash("id", map[string]string{}, nil)
	for _, f := range all {
		get := jobHashFields[f]
		if get == nil {
			continue
		}
		want := ""
		if d, ok := defaults[f]; ok {
			want = fmt.Sprint(d)
			if n, isNum := d.(float64); isNum {
				want = strconv.FormatInt(int64(n), 10)
			}
		} else if numbers[f] {
			want = "0"
		}
		if f == "held" {
			want = "0" // a flag: absent is off
		}
		if got := get(empty); got != want {
			t.Errorf("absent %q: Go reads %q, lib.lua %q", f, got, want)
		}
	}
	// Present fields: a value stored under the name the scripts use reaches Go.
	h := map[string]string{}
	for i, f := range all {
		if f == "held" {
			h[f] = "1"
		} else if jobHashFields[f] != nil {
			h[f] = strconv.Itoa(100 + i)
		}
	}
	h["ukey"] = "q\nk\nunique"
	j := jobFromHash("id", h, nil)
	for f, v := range h {
		if get := jobHashFields[f]; get != nil && get(j) != v {
			t.Errorf("field %q = %q: Go reads %q", f, v, get(j))
		}
	}
	if j.UniqueKey != "unique" {
		t.Errorf("ukey %q: Go reads UniqueKey %q", h["ukey"], j.UniqueKey)
	}
}
