package headgate

import (
	"context"
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// scriptSources returns lua/*.lua by name ("ack", ..., and "lib").
func scriptSources(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(luaFiles, "lua", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := luaFiles.ReadFile(path)
		out[strings.TrimSuffix(strings.TrimPrefix(path, "lua/"), ".lua")] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func header(src string) string {
	end := strings.Index(src, "]]")
	if !strings.HasPrefix(src, "--[[") || end < 0 {
		return ""
	}
	return src[:end]
}

// TestLuaHeaders checks that every script opens with its contract (purpose, KEYS, ARGV,
// replies, cost) and that the KEYS it documents are what its Go caller passes.
func TestLuaHeaders(t *testing.T) {
	passed := len((&Store{keys: newKeys("ns")}).scriptKeys())
	for name, src := range scriptSources(t) {
		h := header(src)
		if h == "" {
			t.Errorf("%s.lua does not open with a --[[ ]] header", name)
			continue
		}
		if name == "lib" {
			continue
		}
		if !strings.HasPrefix(h, "--[[\n"+name+".lua: ") {
			t.Errorf("%s.lua header does not start with its name and purpose", name)
		}
		for _, section := range []string{"ARGV", "Replies", "Cost"} {
			if !strings.Contains(h, "\n"+section) {
				t.Errorf("%s.lua header has no %s section", name, section)
			}
		}
		documented := len(regexp.MustCompile(`(?m)^KEYS\[\d+\]`).FindAllString(h, -1))
		if documented != passed {
			t.Errorf("%s.lua header documents %d KEYS, its caller passes %d", name, documented, passed)
		}
		if used := regexp.MustCompile(`KEYS\[(\d+)\]`).FindAllStringSubmatch(src[len(h):], -1); len(used) > 0 {
			for _, u := range used {
				if u[1] != "1" {
					t.Errorf("%s.lua reads KEYS[%s], beyond what its caller passes", name, u[1])
				}
			}
		}
	}
}

// TestLuaScriptsAreBounded rejects commands that walk a whole key space or collection.
// Every loop in a script runs over ARGV or over a range capped by an argument.
func TestLuaScriptsAreBounded(t *testing.T) {
	unbounded := regexp.MustCompile(`'(KEYS|SCAN|SMEMBERS|HKEYS|HVALS|ZRANGEBYLEX)'|'[A-Z]*RANGE[A-Z]*', .*, 0, -1\)`)
	limited := regexp.MustCompile(`'ZRANGEBYSCORE', .*'LIMIT', 0, [a-z_]+\)`)
	for name, src := range scriptSources(t) {
		body := src[len(header(src)):]
		if m := unbounded.FindString(body); m != "" {
			t.Errorf("%s.lua: unbounded command %s", name, m)
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.Contains(line, "'ZRANGEBYSCORE'") && !limited.MatchString(line) {
				t.Errorf("%s.lua: ZRANGEBYSCORE without a LIMIT from an argument: %s", name, strings.TrimSpace(line))
			}
		}
	}
}

// libDefinitions returns the lib.lua definitions whose names want picks, with everything
// they include, as a script would get them: the whole lib.lua has more locals than one
// Lua chunk may hold.
func libDefinitions(t *testing.T, want func(name string) bool) string {
	t.Helper()
	src, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseLib(string(src))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range l.defined {
		if want(n) {
			names = append(names, n)
		}
	}
	in, err := l.closure("the test", names)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, d := range l.defs {
		if in[i] {
			b.WriteString(d.text)
		}
	}
	return b.String()
}

// TestLuaKeysMatchGo holds lua/lib.lua's key builders to keys.go.
func TestLuaKeysMatchGo(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	k := newKeys("ns:1")
	src := libDefinitions(t, func(name string) bool { return strings.HasPrefix(name, "K.") }) + `
local P = KEYS[1]
local got = { K.job(P, 'id:1'), K.errors(P, 'id:1'), K.result(P, 'id:1'), K.output(P, 'id:1'),
  K.progress(P, 'id:1'), K.queues(P), K.counts(P, 'q'), K.ring(P, 'q'),
  K.ring_state(P, 'q'), K.partition(P, 'q', 't:1'), K.pinned_ring(P, 'q', 'w'),
  K.pinned_ring_state(P, 'q', 'w'), K.pinned_partition(P, 'q', 'w', 't:1'), K.wake(P, 'q'),
  K.scheduled(P), K.leases(P), K.retained(P), K.unique(P), K.throttle(P),
  K.throttle_expiry(P), K.quarantine(P), K.held(P, 'fp:1'), K.paused(P), K.limits(P),
  K.rate(P, 'c:1'), K.duty(P, 'd:1'), K.clock(P), K.corrupt(P), K.policy(P), K.parked(P, 'c:1'),
  K.starved(P), K.fp_running(P), K.cancelled(P) }
-- A table constructor of more than 50 calls loses entries in miniredis's Lua: append.
for _, key in ipairs({ K.wf(P, 'w:1'), K.wf_history(P, 'w:1'), K.wf_runs(P, 'w:1'), K.wf_timers(P, 'w:1'), K.wf_ids(P),
  K.wf_status(P, 'running'), K.wf_query(P, 'type:t:1'), K.timers(P), K.vis(P, 'w:1'),
  K.vis_index(P, 'ts:running:t:1'), K.packages(P), K.package_index(P), K.package_routes(P),
  K.package_route_index(P), K.deployments(P), K.deployment_index(P), K.workloops(P),
  K.workloop_index(P), K.workloops_due(P), K.invariant_records(P, 'l:1', 'i:1'),
  K.ns_record(P, 'n:1'), K.ns_index(P), K.wf_inbox(P, 'w:1'), K.wf_closed(P, 'w:1'), K.counters(P) }) do got[#got + 1] = key end
for _, key in ipairs({ K.schedule(P, 's:1'), K.schedules(P), K.schedules_due(P) }) do got[#got + 1] = key end
for _, key in ipairs({ K.workers(P), K.workers_seen(P), K.queue_workers(P, 'q') }) do got[#got + 1] = key end
for _, key in ipairs({ K.job_index(P, 'q', 'held', 'k:1'), K.job_filter_index(P, 'q', 'archived', 'k:1', 'p', 't:1'),
  K.kinds(P, 'q'), K.partition_counts(P, 'q', 't:1') }) do got[#got + 1] = key end
return got`
	got, err := rdb.Eval(context.Background(), src, []string{k.Prefix()}).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{k.Job("id:1"), k.Errors("id:1"), k.Result("id:1"), k.Output("id:1"),
		k.Progress("id:1"), k.Queues(), k.Counts("q"), k.Ring("q"),
		k.RingState("q"), k.Partition("q", "t:1"), k.PinnedRing("q", "w"),
		k.PinnedRingState("q", "w"), k.PinnedPartition("q", "w", "t:1"), k.Wake("q"),
		k.Scheduled(), k.Leases(), k.Retained(), k.Unique(), k.Throttle(),
		k.ThrottleExpiry(), k.Quarantine(), k.Held("fp:1"), k.Paused(), k.Limits(),
		k.Rate("c:1"), k.Duty("d:1"), k.Clock(), k.Corrupt(), k.Policy(), k.Parked("c:1"),
		k.Starved(), k.FingerprintsRunning(), k.Cancelled(),
		k.Workflow("w:1"), k.WorkflowHistory("w:1"), k.WorkflowRuns("w:1"), k.WorkflowTimers("w:1"), k.WorkflowIDs(),
		k.WorkflowsInStatus("running"), k.WorkflowQuery("type:t:1"), k.Timers(), k.Visibility("w:1"),
		k.VisibilityIndex("ts:running:t:1"), k.Packages(), k.PackageIndex(), k.PackageRoutes(),
		k.PackageRouteIndex(), k.Deployments(), k.DeploymentIndex(), k.Workloops(),
		k.WorkloopIndex(), k.WorkloopsDue(), k.InvariantRecords("l:1", "i:1"),
		k.NamespaceRecord("n:1"), k.NamespaceIndex(), k.WorkflowInbox("w:1"), k.WorkflowClosed("w:1"), k.Counters(),
		k.Schedule("s:1"), k.Schedules(), k.SchedulesDue(),
		k.Workers(), k.WorkersSeen(), k.QueueWorkers("q"),
		k.JobIndex("q", "held", "k:1"), k.JobFilterIndex("q", StateArchived, "k:1", "p", "t:1"), k.Kinds("q"),
		k.PartitionCounts("q", "t:1")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lua keys differ from keys.go:\n lua: %q\n  go: %q", got, want)
	}
	// Every key method of keys.go is covered above.
	if n := reflect.TypeOf(k).NumMethod() - 2; n != len(want) { // minus Prefix and JobPattern
		t.Errorf("keys.go has %d key functions, the test covers %d", n, len(want))
	}
	for _, key := range want {
		if !strings.HasPrefix(key, "hg:{ns:1}:") {
			t.Errorf("key %q is outside the namespace's hash tag", key)
		}
	}
	// The namespace registry spans namespaces: a slot of its own.
	if p := registryKeys("").Prefix(); p != "hg:{registry}:" {
		t.Errorf("registry prefix is %q", p)
	}
	if p := registryKeys("s:1").Prefix(); p != "hg:{registry:s:1}:" {
		t.Errorf("scoped registry prefix is %q", p)
	}
}

// scriptWithIncludes is a script's body (after its header) and what it includes.
type scriptWithIncludes struct {
	body     string
	includes []string
}

// scriptsIncludes returns every script but lib.lua, by name.
func scriptsIncludes(t *testing.T) map[string]scriptWithIncludes {
	t.Helper()
	out := map[string]scriptWithIncludes{}
	for name, src := range scriptSources(t) {
		if name == "lib" {
			continue
		}
		includes, err := scriptIncludes(name, src)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = scriptWithIncludes{body: src[len(header(src)):], includes: includes}
	}
	return out
}

// TestLuaScriptIncludes pins what each script pulls in from lib.lua: its includes and
// everything they reach, in lib.lua order. A change here changes what every call of the
// script parses and runs; update the table on purpose.
func TestLuaScriptIncludes(t *testing.T) {
	want := map[string]string{
		"bulk_delete": `rcall K K.job K.errors K.result K.output K.progress K.counts K.ring K.ring_state K.partition
			K.pinned_ring K.pinned_ring_state K.pinned_partition K.scheduled K.leases K.retained
			K.unique K.held K.parked K.fp_running OK E_CORRUPT UNFINISHED rank str K.job_index
			K.job_filter_index K.kinds K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT
			INDEX_FIELDS index_filed index_ops index_order pcount_delta pcount_order kinds_added
			index_fill index_put pcount_add index_at_ms index_at_text index_file index_move flush_index
			count_delta move_count flush_counts partition_of ring_has ring_remove unindex_available
			unindex_available_job JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS release_unique release_fingerprint
			drop_lease delete_job safe_hmget key_type_known key_ok MAX_SAFE JOB_RANGES bad_job_field
			JOB_STATES load_job_checked counts_ok corrupt_reply needed structure_bad need need_counts
			structure_error unindex_job bytes_less index_rank MAX_MERGED_KINDS E_TOO_MANY_KINDS
			index_select index_selection index_state need_leave_state leave_state bulk_load bulk_reply`,
		"bulk_cancel": `rcall K K.job K.counts K.ring K.ring_state K.partition K.pinned_ring K.pinned_ring_state
			K.pinned_partition K.scheduled K.leases K.retained K.unique K.held K.clock K.policy
			K.cancelled K.parked K.fp_running OK E_CORRUPT now_ms POLICY_FIELDS POLICY_DEFAULTS policy
			load_policy rank str K.job_index K.job_filter_index K.kinds K.partition_counts DIM_PARTITION
			DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops index_order pcount_delta
			pcount_order kinds_added index_fill index_put pcount_add index_at_ms index_at_text
			index_file index_move flush_index count_delta move_count flush_counts partition_of ring_has
			ring_remove unindex_available unindex_available_job JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS
			release_unique release_fingerprint drop_lease retention_of finalize safe_hmget
			key_type_known key_ok MAX_SAFE JOB_RANGES bad_job_field JOB_STATES load_job_checked
			counts_ok corrupt_reply needed structure_bad need need_counts structure_error
			load_policy_checked unindex_job bytes_less index_rank MAX_MERGED_KINDS E_TOO_MANY_KINDS
			index_select index_selection index_state need_leave_state leave_state bulk_load bulk_reply`,
		"bulk_retry": `rcall K K.job K.counts K.ring K.ring_state K.partition K.pinned_ring K.pinned_ring_state
			K.pinned_partition K.wake K.scheduled K.leases K.retained K.unique K.quarantine K.held
			K.limits K.clock K.parked OK E_BACKPRESSURE E_CORRUPT now_ms quarantine_known is_quarantined
			rank num str K.job_index K.job_filter_index K.kinds K.partition_counts DIM_PARTITION DIM_TAG
			DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops index_order pcount_delta pcount_order
			kinds_added index_fill index_put pcount_add index_at_ms index_at_text index_file index_move
			flush_index count_delta move_count flush_counts unfinished partition_of ring_last ring_has
			ring_contains ring_push_back wake available_adds flush_available index_available JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS
			make_available safe_hmget key_type_known key_ok MAX_SAFE JOB_RANGES bad_job_field JOB_STATES
			load_job_checked counts_ok corrupt_reply needed structure_bad need need_counts
			structure_error need_available bytes_less index_rank MAX_MERGED_KINDS E_TOO_MANY_KINDS
			index_select index_selection index_state need_leave_state bulk_load bulk_reply`,
		"list_jobs": `rcall K K.job K.leases K.clock OK E_CORRUPT now_ms K.job_index K.job_filter_index K.kinds
			key_type_known key_ok corrupt_reply bytes_less index_rank MAX_MERGED_KINDS E_TOO_MANY_KINDS
			index_select index_selection`,
		"why": `rcall K K.job K.errors K.counts K.ring K.ring_state K.partition K.pinned_ring
			K.pinned_ring_state K.pinned_partition K.leases K.quarantine K.paused K.limits K.rate
			K.clock K.policy K.corrupt K.fp_running OK E_NOT_FOUND E_CORRUPT now_ms rank num str
			unfinished partition_of JOB_NUMBERS JOB_DEFAULTS load_bucket safe_hmget key_type_known
			key_ok MAX_SAFE JOB_RANGES bad_job_field JOB_STATES load_job_checked corrupt_reply
			first_bad_key K.workers K.workers_seen K.queue_workers worker_record`,
		"heartbeat": `rcall K K.clock OK E_CORRUPT now_ms key_type_known key_ok corrupt_reply first_bad_key
			K.workers K.workers_seen K.queue_workers worker_record`,
		"ack": `rcall K K.job K.errors K.result K.output K.progress K.counts K.ring K.ring_state K.partition
			K.pinned_ring K.pinned_ring_state K.pinned_partition K.wake K.scheduled K.leases K.retained
			K.unique K.quarantine K.held K.rate K.clock K.policy K.corrupt K.starved K.fp_running OK
			E_LEASE_REJECTED E_CORRUPT now_ms UNFINISHED POLICY_FIELDS POLICY_DEFAULTS policy
			load_policy ERROR_HISTORY_ENTRIES ERROR_HISTORY_BYTES quarantine_known is_quarantined rank
			num str K.job_index K.job_filter_index K.kinds K.partition_counts DIM_PARTITION DIM_TAG
			DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops index_order pcount_delta pcount_order
			kinds_added index_fill index_put pcount_add index_at_ms index_at_text index_file
			index_clock_ms index_clock index_move flush_index count_delta move_count flush_counts
			mark_aux push_error partition_of ring_last ring_has ring_contains ring_push_back wake available_adds
			index_available JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS release_unique backoff
			release_fingerprint drop_lease retention_of finalize delete_job schedule make_available
			load_bucket save_bucket rate_changed true_up park_corrupt safe_hmget key_type_known key_ok
			MAX_SAFE JOB_RANGES bad_job_field JOB_STATES load_job_checked counts_ok corrupt_reply needed
			structure_bad need need_counts structure_error load_policy_checked history_ok need_available
			K.counters count_event`,
		"admit": `rcall K K.job K.counts K.ring K.ring_state K.partition K.pinned_ring K.pinned_ring_state
			K.pinned_partition K.wake K.leases K.quarantine K.held K.paused K.rate K.clock K.policy
			K.corrupt K.parked K.starved K.fp_running OK E_CORRUPT now_ms quarantine_known
			is_quarantined RANK_WIDTH rank num str K.job_index K.job_filter_index K.kinds
			K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops
			index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_view index_move flush_index count_delta
			move_count flush_counts partition_of ring_last ring_has ring_contains ring_push_back
			ring_remove wake available_adds index_available JOB_NUMBERS JOB_DEFAULTS load_bucket save_bucket
			park_corrupt safe_hmget key_type_known key_ok MAX_SAFE JOB_RANGES bad_job_field JOB_STATES
			load_job_checked counts_ok corrupt_reply K.counters count_event`,
		"cancel": `rcall K K.job K.counts K.ring K.ring_state K.partition K.pinned_ring K.pinned_ring_state
			K.pinned_partition K.scheduled K.leases K.retained K.unique K.held K.clock K.policy
			K.corrupt K.cancelled K.parked K.fp_running OK E_NOT_FOUND E_NOT_CANCELLABLE E_CORRUPT
			now_ms UNFINISHED POLICY_FIELDS POLICY_DEFAULTS policy load_policy rank str K.job_index
			K.job_filter_index K.kinds K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT
			INDEX_FIELDS index_filed index_ops index_order pcount_delta pcount_order kinds_added
			index_fill index_put pcount_add index_at_ms index_at_text index_file index_move flush_index
			count_delta move_count flush_counts partition_of ring_has ring_remove unindex_available
			unindex_available_job JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS release_unique release_fingerprint
			drop_lease retention_of finalize park_corrupt safe_hmget key_type_known key_ok MAX_SAFE
			JOB_RANGES bad_job_field JOB_STATES load_job_checked counts_ok corrupt_reply first_bad_key
			park_unreadable_job unindex_job_keys unindex_job`,
		"checkpoint": `rcall K K.job OK E_LEASE_REJECTED E_CORRUPT str JOB_NUMBERS JOB_DEFAULTS HOLDER_FIELDS
			safe_hmget MAX_SAFE JOB_RANGES bad_job_field JOB_STATES load_job_checked corrupt_reply
			holder_checked K.counters count_event held_job`,
		"claim_duty": `rcall K K.duty K.clock OK now_ms safe_hmget MAX_SAFE`,
		"delete": `rcall K K.job K.errors K.result K.output K.progress K.counts K.ring K.ring_state K.partition
			K.pinned_ring K.pinned_ring_state K.pinned_partition K.scheduled K.leases K.retained
			K.unique K.held K.corrupt K.parked K.fp_running OK E_NOT_FOUND E_CORRUPT E_JOB_RUNNING
			UNFINISHED rank str K.job_index K.job_filter_index K.kinds K.partition_counts DIM_PARTITION
			DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops index_order pcount_delta
			pcount_order kinds_added index_fill index_put pcount_add index_at_ms index_at_text
			index_file index_move flush_index count_delta move_count flush_counts partition_of ring_has
			ring_remove unindex_available unindex_available_job JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS
			release_unique release_fingerprint delete_job park_corrupt safe_hmget key_type_known key_ok
			MAX_SAFE JOB_RANGES bad_job_field JOB_STATES load_job_checked counts_ok corrupt_reply
			first_bad_key park_unreadable_job unindex_job_keys unindex_job`,
		"edit": `rcall K K.job K.counts K.ring K.ring_state K.partition K.pinned_ring K.pinned_ring_state
			K.pinned_partition K.wake K.scheduled K.leases K.quarantine K.held K.clock K.corrupt
			K.parked OK E_NOT_FOUND E_CORRUPT E_JOB_RUNNING E_NOT_EDITABLE now_ms quarantine_known
			is_quarantined rank str K.job_index K.job_filter_index K.kinds K.partition_counts
			DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops index_order
			pcount_delta pcount_order kinds_added index_fill index_put pcount_add index_at_ms
			index_at_text index_file index_clock_ms index_clock index_note index_move flush_index
			count_delta move_count flush_counts partition_of ring_last ring_has ring_contains
			ring_push_back ring_remove wake available_adds index_available unindex_available unindex_available_job
			JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS schedule make_available park_corrupt safe_hmget
			key_type_known key_ok MAX_SAFE JOB_RANGES bad_job_field JOB_STATES load_job_checked
			counts_ok corrupt_reply first_bad_key park_unreadable_job EDIT_PAYLOAD EDIT_PRIORITY
			EDIT_MAX_ATTEMPTS EDIT_SCHEDULED_AT EDIT_PARTITION EDIT_TAGS PAYLOAD_PIECE PAYLOAD_PIECE_FIELDS payload_fields write_payload edit_has apply_edit`,
		"enqueue": `rcall K K.job K.queues K.counts K.ring K.ring_state K.partition K.pinned_ring
			K.pinned_ring_state K.pinned_partition K.wake K.scheduled K.unique K.throttle
			K.throttle_expiry K.quarantine K.held K.limits K.clock K.parked OK E_ID_CONFLICT E_DUPLICATE
			E_QUARANTINED E_BACKPRESSURE E_CORRUPT now_ms quarantine_known is_quarantined rank num str
			K.job_index K.job_filter_index K.kinds K.partition_counts DIM_PARTITION DIM_TAG
			DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops index_order pcount_delta pcount_order
			kinds_added index_fill index_put pcount_add index_at_ms index_at_text index_file
			index_clock_ms index_clock index_note index_move flush_index count_delta move_count
			flush_counts unfinished partition_of ring_last ring_has ring_contains ring_push_back
			ring_remove wake available_adds index_available unindex_available unindex_available_job JOB_FIELDS
			JOB_NUMBERS JOB_DEFAULTS load_fields load_job schedule make_available safe_hmget
			key_type_known key_ok MAX_SAFE JOB_RANGES bad_job_field JOB_STATES load_job_checked
			counts_ok corrupt_reply needed structure_bad need need_counts structure_error need_available PAYLOAD_PIECE PAYLOAD_PIECE_FIELDS payload_fields write_payload
			K.counters count_event new_job_fields take_unique unique_holder`,
		"evict": `rcall K K.job K.errors K.result K.output K.progress K.counts K.retained K.throttle
			K.throttle_expiry K.clock K.corrupt K.fp_running OK E_CORRUPT now_ms UNFINISHED str
			K.job_index K.job_filter_index K.kinds K.partition_counts DIM_PARTITION DIM_TAG
			DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops index_order pcount_delta pcount_order
			kinds_added index_fill index_put pcount_add index_at_ms index_at_text index_file index_move
			flush_index count_delta move_count flush_counts JOB_NUMBERS JOB_DEFAULTS release_fingerprint
			delete_job park_corrupt safe_hmget key_type_known key_ok MAX_SAFE JOB_RANGES bad_job_field
			JOB_STATES load_job_checked counts_ok corrupt_reply needed structure_bad need need_counts
			structure_error`,
		"promote": `rcall K K.job K.counts K.ring K.ring_state K.partition K.pinned_ring K.pinned_ring_state
			K.pinned_partition K.wake K.scheduled K.quarantine K.held K.clock K.corrupt OK E_CORRUPT
			now_ms quarantine_known is_quarantined rank str K.job_index K.job_filter_index K.kinds
			K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops
			index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_move flush_index count_delta move_count
			flush_counts partition_of ring_last ring_has ring_contains ring_push_back wake available_adds
			index_available JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS make_available park_corrupt safe_hmget
			key_type_known key_ok MAX_SAFE JOB_RANGES bad_job_field JOB_STATES load_job_checked
			counts_ok corrupt_reply first_bad_key index_bad_key route_bad_key parking_refused`,
		"reclaim": `rcall K K.job K.errors K.counts K.scheduled K.leases K.retained K.unique K.quarantine
			K.clock K.policy K.corrupt K.fp_running OK E_CORRUPT now_ms POLICY_FIELDS POLICY_DEFAULTS
			policy load_policy ERROR_HISTORY_ENTRIES ERROR_HISTORY_BYTES quarantine_known quarantine str
			K.job_index K.job_filter_index K.kinds K.partition_counts DIM_PARTITION DIM_TAG
			DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops index_order pcount_delta pcount_order
			kinds_added index_fill index_put pcount_add index_at_ms index_at_text index_file
			index_clock_ms index_clock index_move flush_index count_delta move_count flush_counts
			push_error JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS release_unique backoff release_fingerprint
			spread crash_backoff drop_lease retention_of finalize schedule park_corrupt safe_hmget
			key_type_known key_ok MAX_SAFE JOB_RANGES bad_job_field JOB_STATES load_job_checked
			counts_ok corrupt_reply needed structure_bad need need_counts structure_error
			load_policy_checked history_ok K.counters count_event`,
		"release_duty": `rcall K K.duty OK safe_hmget`,
		"release_pending": `rcall K K.job K.counts K.ring K.ring_state K.partition K.pinned_ring K.pinned_ring_state
			K.pinned_partition K.wake K.scheduled K.quarantine K.held K.clock K.corrupt OK E_CORRUPT
			now_ms quarantine_known is_quarantined rank str K.job_index K.job_filter_index K.kinds
			K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops
			index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_clock_ms index_clock index_move flush_index
			count_delta move_count flush_counts partition_of ring_last ring_has ring_contains
			ring_push_back wake available_adds index_available JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS schedule
			make_available park_corrupt safe_hmget key_type_known key_ok MAX_SAFE JOB_RANGES
			bad_job_field JOB_STATES load_job_checked counts_ok corrupt_reply first_bad_key
			index_bad_key route_bad_key parking_refused`,
		"release_quarantine": `rcall K K.job K.counts K.ring K.ring_state K.partition K.pinned_ring K.pinned_ring_state
			K.pinned_partition K.wake K.quarantine K.held K.clock K.corrupt OK E_CORRUPT now_ms rank str
			K.job_index K.job_filter_index K.kinds K.partition_counts DIM_PARTITION DIM_TAG
			DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops index_order pcount_delta pcount_order
			kinds_added index_fill index_put pcount_add index_at_ms index_at_text index_file
			index_clock_ms index_clock index_move flush_index count_delta move_count flush_counts
			partition_of ring_last ring_has ring_contains ring_push_back wake available_adds index_available JOB_FIELDS
			JOB_NUMBERS JOB_DEFAULTS park_corrupt safe_hmget key_type_known key_ok MAX_SAFE JOB_RANGES
			bad_job_field JOB_STATES load_job_checked counts_ok corrupt_reply first_bad_key
			index_bad_key parking_refused`,
		"renew": `rcall K K.job K.leases K.clock K.corrupt OK E_CORRUPT now_ms str JOB_NUMBERS JOB_DEFAULTS
			HOLDER_FIELDS park_corrupt safe_hmget key_type_known key_ok MAX_SAFE JOB_RANGES
			bad_job_field JOB_STATES load_job_checked corrupt_reply first_bad_key holder_checked
			K.counters count_event parking_refused`,
		"retry": `rcall K K.job K.counts K.ring K.ring_state K.partition K.pinned_ring K.pinned_ring_state
			K.pinned_partition K.wake K.scheduled K.leases K.retained K.unique K.quarantine K.held
			K.limits K.clock K.corrupt OK E_DUPLICATE E_BACKPRESSURE E_NOT_FOUND E_CORRUPT
			E_NOT_RETRYABLE now_ms quarantine_known is_quarantined rank num str K.job_index
			K.job_filter_index K.kinds K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT
			INDEX_FIELDS index_filed index_ops index_order pcount_delta pcount_order kinds_added
			index_fill index_put pcount_add index_at_ms index_at_text index_file index_clock_ms
			index_clock index_note index_move flush_index count_delta move_count flush_counts unfinished
			partition_of ring_last ring_has ring_contains ring_push_back wake available_adds index_available JOB_FIELDS
			JOB_NUMBERS JOB_DEFAULTS schedule make_available park_corrupt safe_hmget key_type_known
			key_ok MAX_SAFE JOB_RANGES bad_job_field JOB_STATES load_job_checked counts_ok corrupt_reply
			first_bad_key park_unreadable_job EDIT_PAYLOAD EDIT_PRIORITY EDIT_MAX_ATTEMPTS
			EDIT_SCHEDULED_AT EDIT_PARTITION EDIT_TAGS PAYLOAD_PIECE PAYLOAD_PIECE_FIELDS payload_fields write_payload edit_has apply_edit`,
		"set_policy":     `rcall K K.policy OK`,
		"set_rate_limit": `rcall K K.rate K.clock K.starved OK now_ms rate_changed key_type_known key_ok`,
		"write_output": `rcall K K.job K.output K.clock OK E_LEASE_REJECTED E_CORRUPT now_ms str mark_aux JOB_NUMBERS
			JOB_DEFAULTS HOLDER_FIELDS safe_hmget key_type_known key_ok MAX_SAFE JOB_RANGES
			bad_job_field JOB_STATES load_job_checked corrupt_reply first_bad_key holder_checked
			K.counters count_event held_job write_held_hash`,
		"write_progress": `rcall K K.job K.progress K.clock OK E_LEASE_REJECTED E_CORRUPT now_ms str mark_aux
			JOB_NUMBERS JOB_DEFAULTS HOLDER_FIELDS safe_hmget key_type_known key_ok MAX_SAFE JOB_RANGES
			bad_job_field JOB_STATES load_job_checked corrupt_reply first_bad_key holder_checked
			K.counters count_event held_job write_held_hash`,
		"wf_append": `rcall K K.clock OK now_ms str SEP K.wf K.wf_history K.wf_runs K.wf_ids K.wf_status
			K.wf_query E_SEQUENCE_CONFLICT pad_ms listing_selections listing_move WF_STATUS_OF
			WF_CLOSED wf_load wf_append_events`,
		"wf_commit_task": `rcall K K.job K.errors K.result K.output K.progress K.queues K.counts K.ring K.ring_state
			K.partition K.pinned_ring K.pinned_ring_state K.pinned_partition K.wake K.leases K.retained
			K.unique K.quarantine K.held K.clock K.fp_running OK E_LEASE_REJECTED E_CORRUPT now_ms
			UNFINISHED quarantine_known is_quarantined rank str K.job_index K.job_filter_index K.kinds
			K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops
			index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_move flush_index count_delta move_count
			flush_counts partition_of ring_last ring_has ring_contains ring_push_back wake available_adds
			index_available JOB_NUMBERS JOB_DEFAULTS release_unique release_fingerprint delete_job
			make_available safe_hmget key_type_known key_ok MAX_SAFE JOB_RANGES bad_job_field JOB_STATES
			load_job_checked counts_ok corrupt_reply needed structure_bad need need_counts
			structure_error need_available SEP K.wf K.wf_history K.wf_runs K.wf_timers K.wf_ids
			K.wf_status K.wf_query K.timers K.vis K.vis_index E_SEQUENCE_CONFLICT pad_ms
			listing_selections listing_move WF_STATUS_OF WF_CLOSED wf_load wf_append_events wf_arm_timer
			wf_record_visibility K.wf_inbox K.wf_closed wf_route wf_enqueue_task wf_need_task
			wf_need_row wf_event wf_deliver wf_open`,
		"wf_fire_timers": `rcall K K.job K.queues K.counts K.ring K.ring_state K.partition K.pinned_ring
			K.pinned_ring_state K.pinned_partition K.wake K.quarantine K.held K.clock OK E_CORRUPT
			now_ms UNFINISHED quarantine_known is_quarantined rank str K.job_index K.job_filter_index
			K.kinds K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed
			index_ops index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_move flush_index count_delta move_count
			flush_counts partition_of ring_last ring_has ring_contains ring_push_back wake available_adds
			index_available make_available safe_hmget key_type_known key_ok MAX_SAFE counts_ok
			corrupt_reply needed structure_bad need need_counts structure_error need_available SEP K.wf
			K.wf_history K.wf_runs K.wf_timers K.wf_ids K.wf_status K.wf_query K.timers pad_ms
			listing_selections listing_move WF_STATUS_OF WF_CLOSED wf_load wf_append_events K.wf_inbox
			wf_route wf_enqueue_task wf_need_task wf_need_row wf_event wf_deliver`,
		"wf_pause": `rcall K K.job K.queues K.counts K.ring K.ring_state K.partition K.pinned_ring
			K.pinned_ring_state K.pinned_partition K.wake K.scheduled K.quarantine K.held K.clock
			K.parked OK E_CORRUPT now_ms UNFINISHED rank str K.job_index K.job_filter_index K.kinds
			K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops
			index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_clock_ms index_clock index_move flush_index
			count_delta move_count flush_counts partition_of ring_has ring_remove unindex_available
			unindex_available_job JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS load_fields load_job safe_hmget
			key_type_known key_ok MAX_SAFE counts_ok corrupt_reply needed structure_bad need need_counts
			structure_error need_available SEP K.wf K.wf_history K.wf_runs K.wf_timers K.wf_ids
			K.wf_status K.wf_query pad_ms listing_selections listing_move WF_STATUS_OF WF_CLOSED wf_load
			wf_append_events unindex_job K.wf_inbox E_WORKFLOW_NOT_FOUND E_WORKFLOW_CLOSED wf_route
			wf_need_task wf_need_row wf_event wf_load_open wf_stage_task`,
		"wf_resume": `rcall K K.job K.queues K.counts K.ring K.ring_state K.partition K.pinned_ring
			K.pinned_ring_state K.pinned_partition K.wake K.quarantine K.held K.clock OK E_CORRUPT
			now_ms UNFINISHED quarantine_known is_quarantined rank str K.job_index K.job_filter_index
			K.kinds K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed
			index_ops index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_move flush_index count_delta move_count
			flush_counts partition_of ring_last ring_has ring_contains ring_push_back wake available_adds
			index_available JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS load_fields load_job make_available
			safe_hmget key_type_known key_ok MAX_SAFE counts_ok corrupt_reply needed structure_bad need
			need_counts structure_error need_available SEP K.wf K.wf_history K.wf_runs K.wf_timers
			K.wf_ids K.wf_status K.wf_query pad_ms listing_selections listing_move WF_STATUS_OF
			WF_CLOSED wf_load wf_append_events K.wf_inbox E_WORKFLOW_NOT_FOUND E_WORKFLOW_CLOSED
			wf_route wf_enqueue_task wf_need_task wf_need_row wf_event wf_load_open`,
		"wf_retry": `rcall K K.job K.queues K.counts K.ring K.ring_state K.partition K.pinned_ring
			K.pinned_ring_state K.pinned_partition K.wake K.quarantine K.held K.clock OK E_CORRUPT
			now_ms UNFINISHED quarantine_known is_quarantined rank str K.job_index K.job_filter_index
			K.kinds K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed
			index_ops index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_move flush_index count_delta move_count
			flush_counts partition_of ring_last ring_has ring_contains ring_push_back wake available_adds
			index_available make_available safe_hmget key_type_known key_ok MAX_SAFE counts_ok
			corrupt_reply needed structure_bad need need_counts structure_error need_available SEP K.wf
			K.wf_history K.wf_runs K.wf_timers K.wf_status K.wf_query K.vis K.vis_index
			E_SEQUENCE_CONFLICT pad_ms listing_selections listing_move wf_load wf_record_visibility
			K.wf_inbox E_WORKFLOW_NOT_FOUND E_WORKFLOW_CLOSED wf_route wf_enqueue_task wf_need_task
			wf_need_row`,
		"wf_signal": `rcall K K.job K.queues K.counts K.ring K.ring_state K.partition K.pinned_ring
			K.pinned_ring_state K.pinned_partition K.wake K.quarantine K.held K.clock OK E_CORRUPT
			now_ms UNFINISHED quarantine_known is_quarantined rank str K.job_index K.job_filter_index
			K.kinds K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed
			index_ops index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_move flush_index count_delta move_count
			flush_counts partition_of ring_last ring_has ring_contains ring_push_back wake available_adds
			index_available make_available safe_hmget key_type_known key_ok MAX_SAFE counts_ok
			corrupt_reply needed structure_bad need need_counts structure_error need_available SEP K.wf
			K.wf_history K.wf_runs K.wf_timers K.wf_ids K.wf_status K.wf_query pad_ms listing_selections
			listing_move WF_STATUS_OF WF_CLOSED wf_load wf_append_events K.wf_inbox E_WORKFLOW_NOT_FOUND
			E_WORKFLOW_CLOSED wf_route wf_enqueue_task wf_need_task wf_need_row wf_event wf_load_open
			wf_deliver`,
		"wf_start": `rcall K K.job K.queues K.counts K.ring K.ring_state K.partition K.pinned_ring
			K.pinned_ring_state K.pinned_partition K.wake K.quarantine K.held K.clock OK E_CORRUPT
			now_ms quarantine_known is_quarantined rank str K.job_index K.job_filter_index K.kinds
			K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops
			index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_move flush_index count_delta move_count
			flush_counts partition_of ring_last ring_has ring_contains ring_push_back wake available_adds
			index_available make_available safe_hmget key_type_known key_ok MAX_SAFE counts_ok
			corrupt_reply needed structure_bad need need_counts structure_error need_available SEP K.wf
			K.wf_history K.wf_runs K.wf_timers K.wf_ids K.wf_status K.wf_query K.vis K.vis_index pad_ms
			listing_selections listing_move WF_STATUS_OF WF_CLOSED wf_load wf_append_events
			wf_record_visibility K.wf_inbox wf_enqueue_task wf_need_task wf_need_row wf_open`,
		"wf_terminate": `rcall K K.job K.errors K.result K.output K.progress K.queues K.counts K.ring K.ring_state
			K.partition K.pinned_ring K.pinned_ring_state K.pinned_partition K.wake K.scheduled K.leases
			K.retained K.quarantine K.held K.clock K.cancelled K.parked K.fp_running OK E_CORRUPT now_ms
			UNFINISHED quarantine_known is_quarantined rank str K.job_index K.job_filter_index K.kinds
			K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed index_ops
			index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_move flush_index count_delta move_count
			flush_counts partition_of ring_last ring_has ring_contains ring_push_back ring_remove wake available_adds
			index_available unindex_available unindex_available_job JOB_FIELDS JOB_NUMBERS JOB_DEFAULTS
			load_fields load_job release_fingerprint drop_lease delete_job make_available safe_hmget
			key_type_known key_ok MAX_SAFE counts_ok corrupt_reply needed structure_bad need need_counts
			structure_error need_available SEP K.wf K.wf_history K.wf_runs K.wf_timers K.wf_ids
			K.wf_status K.wf_query K.timers K.vis K.vis_index pad_ms listing_selections listing_move
			WF_STATUS_OF WF_CLOSED wf_load wf_append_events wf_record_visibility unindex_job K.wf_inbox
			K.wf_closed E_WORKFLOW_NOT_FOUND E_WORKFLOW_CLOSED wf_route wf_enqueue_task wf_need_task
			wf_need_row wf_event wf_load_open wf_deliver wf_drop_task`,
		"wf_delete_package": `rcall K OK SEP K.packages K.package_index`,
		"run_schedule": `rcall K K.job K.queues K.counts K.ring K.ring_state K.partition K.pinned_ring
			K.pinned_ring_state K.pinned_partition K.wake K.unique K.throttle K.throttle_expiry
			K.quarantine K.limits K.clock OK E_ID_CONFLICT E_DUPLICATE E_QUARANTINED E_BACKPRESSURE
			E_CORRUPT now_ms quarantine_known is_quarantined rank num str K.job_index K.job_filter_index
			K.kinds K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT INDEX_FIELDS index_filed
			index_ops index_order pcount_delta pcount_order kinds_added index_fill index_put pcount_add
			index_at_ms index_at_text index_file index_move flush_index count_delta move_count
			flush_counts unfinished partition_of ring_last ring_has ring_contains ring_push_back wake available_adds
			index_available safe_hmget key_type_known key_ok MAX_SAFE counts_ok corrupt_reply needed
			structure_bad need need_counts structure_error PAYLOAD_PIECE PAYLOAD_PIECE_FIELDS payload_fields K.schedule E_SCHEDULE_NOT_FOUND
			E_SCHEDULE_MOVED new_job_fields take_unique unique_holder schedule_template
			schedule_job_verdict write_schedule_job`,
		"remove_schedule": `rcall K OK E_CORRUPT key_type_known key_ok corrupt_reply needed structure_bad need
			structure_error K.schedule K.schedules K.schedules_due E_SCHEDULE_NOT_FOUND`,
		"put_schedule": `rcall K K.clock OK E_CORRUPT now_ms key_type_known key_ok corrupt_reply needed
			structure_bad need structure_error K.schedule K.schedules K.schedules_due
			E_SCHEDULE_NOT_FOUND E_SCHEDULE_EXISTS`,
		"fire_schedule": `rcall K K.job K.queues K.counts K.ring K.ring_state K.partition K.pinned_ring
			K.pinned_ring_state K.pinned_partition K.wake K.unique K.throttle K.throttle_expiry
			K.quarantine K.limits K.duty K.clock OK E_ID_CONFLICT E_DUPLICATE E_QUARANTINED
			E_BACKPRESSURE E_CORRUPT now_ms quarantine_known is_quarantined rank num str K.job_index
			K.job_filter_index K.kinds K.partition_counts DIM_PARTITION DIM_TAG DIM_FINGERPRINT
			INDEX_FIELDS index_filed index_ops index_order pcount_delta pcount_order kinds_added
			index_fill index_put pcount_add index_at_ms index_at_text index_file index_move flush_index
			count_delta move_count flush_counts unfinished partition_of ring_last ring_has ring_contains
			ring_push_back wake available_adds index_available safe_hmget key_type_known key_ok MAX_SAFE counts_ok
			corrupt_reply needed structure_bad need need_counts structure_error PAYLOAD_PIECE PAYLOAD_PIECE_FIELDS payload_fields K.schedule
			K.schedules_due E_SCHEDULE_NOT_FOUND E_SCHEDULE_MOVED E_DUTY_LOST new_job_fields take_unique
			unique_holder schedule_template schedule_job_verdict write_schedule_job`,
		"pause_schedule": `rcall K K.clock OK E_CORRUPT now_ms key_type_known key_ok corrupt_reply needed
			structure_bad need structure_error K.schedule K.schedules_due E_SCHEDULE_NOT_FOUND`,
		"wf_delete_worker_deployment": `rcall K OK K.deployments K.deployment_index`,
		"wf_deprecate_namespace":      `rcall K OK K.ns_record`,
		"wf_expired_timers":           `rcall K K.clock OK now_ms K.wf_timers K.timers`,
		"wf_put_invariant_record":     `rcall K K.clock OK now_ms SEP K.invariant_records`,
		"wf_put_namespace":            `rcall K K.clock OK now_ms SEP K.ns_record K.ns_index pad_ms put_namespace_record`,
		"wf_put_package": `rcall K K.clock OK now_ms SEP K.packages K.package_index K.package_routes
			K.package_route_index pad_ms`,
		"wf_put_package_route": `rcall K OK K.package_routes K.package_route_index`,
		"wf_put_worker_deployment": `rcall K K.clock OK now_ms K.deployments K.deployment_index DEPLOYMENT_DESIRED
			deployment_parse deployment_row`,
		"wf_put_workloop": `rcall K OK K.workloops K.workloop_index K.workloops_due`,
		"wf_record_visibility": `rcall K K.clock OK now_ms SEP K.vis K.vis_index pad_ms listing_selections
			listing_move wf_record_visibility`,
		"wf_register_namespace": `rcall K K.clock OK now_ms SEP K.ns_record K.ns_index pad_ms put_namespace_record`,
		"wf_remove_visibility":  `rcall K OK SEP K.vis K.vis_index pad_ms listing_selections listing_move`,
		"wf_remove_workloop":    `rcall K OK K.workloops K.workloop_index K.workloops_due`,
		"wf_retire_timer":       `rcall K OK SEP K.wf_timers K.timers wf_retire_timer`,
		"wf_schedule_timer":     `rcall K OK SEP K.wf_timers K.timers wf_arm_timer`,
		"wf_set_desired_state": `rcall K K.clock OK now_ms K.deployments E_UNDECODABLE DEPLOYMENT_DESIRED
			deployment_parse deployment_row`,
		"wf_set_namespace_placement":     `rcall K K.clock OK now_ms K.ns_record`,
		"wf_write_raw_worker_deployment": `rcall K OK K.deployments K.deployment_index`,
	}
	for name, sc := range scriptsIncludes(t) {
		in, err := lib.closure(name, sc.includes)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, d := range lib.defs {
			if in[i] {
				got = append(got, d.names...)
			}
		}
		if w, ok := want[name]; !ok {
			t.Errorf("%s.lua has no entry in the table; it pulls in:\n%s", name, strings.Join(got, " "))
		} else if !slices.Equal(got, strings.Fields(w)) {
			t.Errorf("%s.lua pulls in\n %s\nthe table says\n %s", name, strings.Join(got, " "), strings.Join(strings.Fields(w), " "))
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("the table lists %s.lua, which does not exist", name)
	}
}

// TestLuaIncludesMatchUses holds every include list to the code it stands for: a script,
// or a definition of lib.lua, that uses a name of lib.lua includes it, and includes
// nothing it does not use. Names inside strings and comments are not uses.
func TestLuaIncludesMatchUses(t *testing.T) {
	defined := func(n string) bool { _, ok := lib.defined[n]; return ok }
	check := func(what, code string, own, includes []string) {
		used := luaNamesUsed(stripLua(code), defined)
		for _, n := range used {
			if !slices.Contains(own, n) && !slices.Contains(includes, n) {
				t.Errorf("%s uses %s without --- @include %s", what, n, n)
			}
		}
		for _, n := range includes {
			if !slices.Contains(used, n) {
				t.Errorf("%s includes %s but does not use it", what, n)
			}
		}
	}
	for name, sc := range scriptsIncludes(t) {
		check(name+".lua", sc.body, nil, sc.includes)
	}
	for _, d := range lib.defs {
		check("lib.lua "+d.names[0], d.text, d.names, d.includes)
	}
}

// TestLuaIncludeErrors: a name lib.lua does not define, an include line out of place,
// and a definition nothing reaches are refused when the scripts load.
func TestLuaIncludeErrors(t *testing.T) {
	const libSrc = `--[[ header ]]
local rcall = redis.call
--- @include rcall
local function used() return rcall('TIME') end
local function dead() return 1 end
`
	l, err := parseLib(libSrc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.assemble("s", "--[[ h ]]\n--- @include nowhere\nreturn 1\n"); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("unknown include in a script: %v", err)
	}
	if _, err := l.assemble("s", "--[[ h ]]\nlocal x = 1\n--- @include used\nreturn x\n"); err == nil {
		t.Error("an include line after the code was accepted")
	}
	got, err := l.assemble("s", "--[[ h ]]\n--- @include used\nreturn used()\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "local rcall") || strings.Contains(got, "dead") {
		t.Errorf("assembled the wrong closure:\n%s", got)
	}
	if err := l.checkAllIncluded(map[string]string{"s": "--[[ h ]]\n--- @include used\n"}); err == nil || !strings.Contains(err.Error(), "dead") {
		t.Errorf("a definition no script reaches: %v", err)
	}
	for _, bad := range []string{
		"--[[ h ]]\n--- @include nowhere\nlocal function f() end\n", // unknown name in lib
		"--[[ h ]]\nlocal x = 1\n  --- @include x\n",                // not above a definition
		"--[[ h ]]\nlocal x = 1\nlocal x = 2\n",                     // defined twice
	} {
		if _, err := parseLib(bad); err == nil {
			t.Errorf("parseLib accepted %q", bad)
		}
	}
	// Strings and comments are not code.
	code := stripLua("f('holder', \"rcall\") -- now_ms\n--[[ wake ]] g([[rank]]) h(x.holder)")
	if used := luaNamesUsed(code, func(n string) bool {
		return n == "holder" || n == "rcall" || n == "now_ms" || n == "wake" || n == "rank"
	}); len(used) > 0 {
		t.Errorf("names in strings, comments or fields taken for uses: %v", used)
	}
}
