package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/dashboard"
	"github.com/headgate/headgate/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

type testBundle struct {
	ctx   context.Context
	store *headgate.Store
	h     http.Handler
	// log is what the handler logged: actions are logged before their operation shows as
	// finished, and act waits for that.
	log *bytes.Buffer
}

// setup returns a dashboard of a fresh namespace on the shared miniredis, with the store
// clock frozen at epoch and a crash limit of 1, configured by cfg (namespace and logger
// filled in).
func setup(t *testing.T, cfg dashboard.Config) *testBundle {
	t.Helper()
	rdb := redistest.Miniredis(t)
	ns := redistest.Namespace(t)
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns, CrashLimit: 1})
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	ctx := context.Background()
	if err := store.FreezeClock(ctx, epoch); err != nil {
		t.Fatalf("FreezeClock: %v", err)
	}
	b := &testBundle{ctx: ctx, store: store, log: &bytes.Buffer{}}
	cfg.Namespace = ns
	cfg.Logger = slog.New(slog.NewTextHandler(b.log, nil))
	if b.h, err = dashboard.New(rdb, &cfg); err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

func (b *testBundle) enqueue(t *testing.T, jobs ...headgate.Envelope) {
	t.Helper()
	for i := range jobs {
		jobs[i].Kind = cmpOr(jobs[i].Kind, "test")
	}
	if _, err := b.store.Enqueue(b.ctx, jobs...); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (b *testBundle) cancel(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := b.store.Cancel(b.ctx, id); err != nil {
			t.Fatalf("Cancel(%s): %v", id, err)
		}
	}
}

func (b *testBundle) state(t *testing.T, id string) headgate.State {
	t.Helper()
	j, err := b.store.GetJob(b.ctx, id)
	if errors.Is(err, headgate.ErrJobNotFound) {
		return "deleted"
	}
	if err != nil {
		t.Fatalf("GetJob(%s): %v", id, err)
	}
	return j.State
}

type response struct {
	status int
	header http.Header
	body   string
}

// get requests path from a loopback client.
func (b *testBundle) get(t *testing.T, path string) response {
	t.Helper()
	return b.do(t, httptest.NewRequest(http.MethodGet, path, nil))
}

// post submits form to path from a loopback client, as a same-origin page would.
func (b *testBundle) post(t *testing.T, path string, form url.Values, edit ...func(*http.Request)) response {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("Origin", "http://example.com")
	for _, e := range edit {
		e(r)
	}
	return b.do(t, r)
}

func (b *testBundle) do(t *testing.T, r *http.Request) response {
	t.Helper()
	if r.RemoteAddr == "192.0.2.1:1234" { // httptest's default: a client on another host
		r.RemoteAddr = "127.0.0.1:40000"
	}
	w := httptest.NewRecorder()
	b.h.ServeHTTP(w, r)
	body, err := io.ReadAll(w.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: w.Code, header: w.Header(), body: string(body)}
}

func (b *testBundle) mustGet(t *testing.T, path string, want ...string) string {
	t.Helper()
	res := b.get(t, path)
	if res.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, res.status, res.body)
	}
	for _, w := range want {
		if !strings.Contains(res.body, w) {
			t.Errorf("GET %s: body lacks %q:\n%s", path, w, res.body)
		}
	}
	return res.body
}

// operation is an operation's progress as its JSON reports it.
type operation struct {
	Total, Done, Refused, Skipped, Processed int64
	Errors                                   []string
	Finished                                 bool
	Result                                   string
	Started                                  string
}

// startedLayout is the time format of an operation's started: RFC 3339 in UTC to the
// millisecond, as the CLI's -json times.
var startedLayout = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// act posts an action with confirm=1 and waits for its operation to finish.
func (b *testBundle) act(t *testing.T, path string, form url.Values) operation {
	t.Helper()
	form.Set("confirm", "1")
	res := b.post(t, path, form)
	if res.status != http.StatusSeeOther {
		t.Fatalf("POST %s %v: %d %s, want 303 to the operation", path, form, res.status, res.body)
	}
	loc := res.header.Get("Location")
	if !strings.Contains(loc, "/operations/") {
		t.Fatalf("POST %s redirected to %q, want an operation page", path, loc)
	}
	b.mustGet(t, loc, "<progress")
	res = b.get(t, loc+"/progress.json?wait=10000")
	var op operation
	if err := json.Unmarshal([]byte(res.body), &op); err != nil {
		t.Fatalf("progress of %s: %v in %q", loc, err, res.body)
	}
	if !op.Finished {
		t.Fatalf("operation %s not finished after waiting: %+v", loc, op)
	}
	if !startedLayout.MatchString(op.Started) {
		t.Errorf("operation %s started %q, want RFC 3339 in UTC to the millisecond (2030-01-02T03:04:05.000Z)", loc, op.Started)
	}
	return op
}

func TestNew(t *testing.T) {
	t.Parallel()
	rdb := redistest.Miniredis(t)
	for _, tc := range []struct {
		name  string
		cfg   *dashboard.Config
		field string
	}{
		{"no namespace", &dashboard.Config{}, "Namespace"},
		{"negative timeout", &dashboard.Config{Namespace: "n", RequestTimeout: -time.Second}, "RequestTimeout"},
		{"bad rate class", &dashboard.Config{Namespace: "n", RateClasses: []string{"a{b}"}}, "RateClasses"},
	} {
		_, err := dashboard.New(rdb, tc.cfg)
		var ie *headgate.InvalidError
		if !errors.As(err, &ie) || ie.Field != tc.field {
			t.Errorf("%s: err = %v, want *InvalidError on %s", tc.name, err, tc.field)
		}
	}
	if _, err := dashboard.New(nil, &dashboard.Config{Namespace: "n"}); err == nil {
		t.Error("New(nil rdb): no error")
	}
}

func TestOverview(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.enqueue(t, headgate.Envelope{ID: "a1", Queue: "alpha"}, headgate.Envelope{ID: "a2", Queue: "alpha"},
		headgate.Envelope{ID: "b1", Queue: "beta"})
	b.cancel(t, "b1")
	if err := b.store.PauseQueue(b.ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	res := b.get(t, "/")
	if res.status != http.StatusOK {
		t.Fatalf("GET /: %d %s", res.status, res.body)
	}
	csp := res.header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "style-src 'self'", "default-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	row := func(queue string) string {
		m := regexp.MustCompile(`(?s)<tr data-queue="` + queue + `">.*?</tr>`).FindString(res.body)
		if m == "" {
			t.Fatalf("overview has no row for %s:\n%s", queue, res.body)
		}
		return m
	}
	if r := row("alpha"); !strings.Contains(r, `data-state="available" href="/queues/alpha/available">2<`) || strings.Contains(r, "paused") {
		t.Errorf("alpha row = %s, want 2 available, running", r)
	}
	if r := row("beta"); !strings.Contains(r, `data-state="cancelled" href="/queues/beta/cancelled">1<`) || !strings.Contains(r, "paused") {
		t.Errorf("beta row = %s, want 1 cancelled, paused", r)
	}
	if strings.Contains(res.body, "<button") {
		t.Error("read-only overview shows action buttons")
	}

	var s struct {
		Now    int64                       `json:"now_ms"`
		Queues map[string]map[string]int64 `json:"queues"`
		Paused map[string]bool             `json:"paused"`
	}
	js := b.get(t, "/overview.json")
	if err := json.Unmarshal([]byte(js.body), &s); err != nil {
		t.Fatalf("overview.json: %v in %q", err, js.body)
	}
	if s.Now != epoch.UnixMilli() || s.Queues["alpha"]["available"] != 2 || s.Queues["beta"]["cancelled"] != 1 || !s.Paused["beta"] {
		t.Errorf("overview.json = %+v", s)
	}
}

// TestPagesHaveNoInlineCode holds every page to the Content-Security-Policy: no inline
// script, no style attribute, no event handler attribute, assets only from the dashboard.
// TestOverviewThroughput: the chart of the last hour shows, a bar a minute, exactly the
// jobs completed and attempts failed between the series' samples, and each queue its
// totals.
func TestOverviewThroughput(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.mustGet(t, "/", "No sample yet")
	var jobs []headgate.Envelope
	for i := range 6 {
		jobs = append(jobs, headgate.Envelope{ID: fmt.Sprintf("j%d", i), Queue: "q", Retention: time.Hour})
	}
	b.enqueue(t, append(jobs, headgate.Envelope{ID: "idle", Queue: "other"})...)
	// Before any sample the last hour is unknown: "—", as headgate stats prints "-", not
	// zeros that read as an idle hour.
	if body := b.mustGet(t, "/", `<td class="num" data-done-hour>—</td>`, `<td class="num" data-failed-hour>—</td>`); strings.Contains(body, "data-done-hour>0<") {
		t.Errorf("a queue without a sample shows 0 done in the last hour")
	}
	record := func() {
		t.Helper()
		if n, err := b.store.RecordSeries(b.ctx, 0); err != nil || n != 2 {
			t.Fatalf("RecordSeries = %d, %v", n, err)
		}
	}
	// ack admits n jobs of q and acks them with outcomes, in one call.
	ack := func(lease string, outcomes ...headgate.Outcome) {
		t.Helper()
		claims, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: lease, Queues: []string{"q"},
			Capacity: len(outcomes), Lease: time.Minute})
		if err != nil || len(claims) != len(outcomes) {
			t.Fatalf("Admit: %d claims, %v", len(claims), err)
		}
		var acks []headgate.AckRequest
		for i, o := range outcomes {
			acks = append(acks, headgate.AckRequest{Lease: claims[i].LeaseRef(), Outcome: o})
		}
		if _, err := b.store.AckMany(b.ctx, acks); err != nil {
			t.Fatal(err)
		}
	}
	step := func() {
		t.Helper()
		if err := b.store.AdvanceClock(b.ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	record() // the base: nothing done yet
	step()
	ack("l1", headgate.OutcomeSuccess, headgate.OutcomeSuccess, headgate.OutcomeSuccess, headgate.OutcomeRetry)
	record()
	step()
	ack("l2", headgate.OutcomeSuccess, headgate.OutcomeSuccess)
	record()
	// Now is epoch+2m: the minute before holds 3 completed and 1 failed (the peak, 120
	// units high), the last minute 2 completed; 12 units a bar.
	body := b.mustGet(t, "/",
		`5 completed · 1 failed attempt(s) · failure rate 16.7% · peak 4 a minute`,
		`<g data-minute="2030-01-02 03:05:05.000 UTC" data-completed="3" data-failed="1">`,
		`<rect class="done" x="696" y="30" width="11" height="90"></rect><rect class="failed" x="696" y="0" width="11" height="30"></rect>`,
		`<g data-minute="2030-01-02 03:06:05.000 UTC" data-completed="2" data-failed="0">`,
		`<rect class="done" x="708" y="60" width="11" height="60"></rect></g>`,
		`<td class="num" data-done-hour>5</td>`, `<td class="num" data-failed-hour>1 (16.7%)</td>`,
		`<td class="num" data-done-hour>0</td>`, `<td class="num" data-failed-hour>0 (—)</td>`)
	if n := strings.Count(body, "<g data-minute="); n != 2 {
		t.Errorf("the chart has %d bars, want 2", n)
	}
	// An hour on, the first minute's bar has left the chart; the sample before the hour
	// still bases the change of the next one.
	for range 59 {
		step()
	}
	if _, _, err := b.store.PromoteDue(b.ctx, 10); err != nil { // the retried job
		t.Fatal(err)
	}
	ack("l3", headgate.OutcomeSuccess)
	record()
	body = b.mustGet(t, "/", `3 completed · 0 failed attempt(s) · failure rate 0.0%`,
		`<g data-minute="2030-01-02 04:05:05.000 UTC" data-completed="1" data-failed="0">`)
	if n := strings.Count(body, "<g data-minute="); n != 2 {
		t.Errorf("an hour on the chart has %d bars, want 2", n)
	}
}

// TestTenants: a queue's partitions with their backlog, running jobs, share of the
// running and the waits of their waiting jobs at known due times.
func TestTenants(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.enqueue(t, headgate.Envelope{ID: "g1", Queue: "q", PartitionKey: "globex"}, headgate.Envelope{ID: "g2", Queue: "q", PartitionKey: "globex"})
	claims, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"q"}, Capacity: 1, Lease: time.Hour})
	if err != nil || len(claims) != 1 {
		t.Fatalf("Admit: %d, %v", len(claims), err)
	}
	// acme's job i is due at epoch + i s; now is epoch + 300 s.
	for i := range 201 {
		b.enqueue(t, headgate.Envelope{ID: fmt.Sprintf("a%03d", i), Queue: "q", PartitionKey: "acme"})
		if err := b.store.AdvanceClock(b.ctx, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.store.AdvanceClock(b.ctx, 99*time.Second); err != nil {
		t.Fatal(err)
	}
	b.mustGet(t, "/", `href="/queues/q/tenants"`)
	b.mustGet(t, "/queues/q/tenants", "2 partition(s) of queue",
		`<tr data-partition="acme">`, `href="/queues/q/available?partition=acme"`,
		`<td class="num" data-backlog>201</td><td class="num" data-running>0</td><td class="num" data-share>0.0%</td><td class="num" data-admitted>0</td><td class="num" data-admitted-share>0.0%</td>
<td class="num" data-p50>3m20s</td><td class="num" data-p99>4m58s</td><td class="num" data-oldest>5m</td>`,
		`<tr data-partition="globex">`,
		`<td class="num" data-backlog>1</td><td class="num" data-running>1</td><td class="num" data-share>100.0%</td><td class="num" data-admitted>1</td><td class="num" data-admitted-share>100.0%</td>
<td class="num" data-p50>5m</td><td class="num" data-p99>5m</td><td class="num" data-oldest>5m</td>`)
	// A queue whose only job is scheduled has no partition with waiting work.
	b.enqueue(t, headgate.Envelope{ID: "later", Queue: "empty", ScheduledAt: epoch.Add(time.Hour)})
	b.mustGet(t, "/queues/empty/tenants", "No partition of this queue has waiting work.")
	if res := b.get(t, "/queues/q/tenants?offset=-1"); res.status != http.StatusBadRequest {
		t.Errorf("a negative offset: %d, want 400", res.status)
	}
}

// TestTenantsNoPartition: the jobs of no partition are counted, and named by a link.
func TestTenantsNoPartition(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.enqueue(t, headgate.Envelope{ID: "n1", Queue: "q"}, headgate.Envelope{ID: "n2", Queue: "q"}, headgate.Envelope{ID: "n3", Queue: "q"})
	b.mustGet(t, "/queues/q/tenants", `<tr data-partition="">`,
		`<td><a href="/queues/q/available">(none)</a></td><td class="num" data-backlog>3</td>`)
}

// A queue whose waiting jobs are all out of the turn order (set aside by their rate
// class) is not shown as one with nothing waiting, as headgate tenants says it.
func TestTenantsJobsOutsideTurnOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	if err := b.store.SetRateLimit(b.ctx, "pdf", headgate.RateLimit{Limit: 1, Window: time.Minute, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	b.enqueue(t, headgate.Envelope{ID: "heavy", Queue: "docs", PartitionKey: "t1", RateClass: "pdf", Weight: 2})
	if c, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l1", Queues: []string{"docs"}, Capacity: 1,
		Lease: time.Minute}); err != nil || len(c) != 0 {
		t.Fatalf("Admit = %v, %v; want the job set aside", c, err)
	}
	b.mustGet(t, "/queues/docs/tenants", "No partition of this queue has waiting work.",
		`<span id="tenants-aside">1 <a href="/queues/docs/available">available job(s)</a> wait outside the turn order`)
}

func TestPagesHaveNoInlineCode(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true, RateClasses: []string{"api"}})
	b.enqueue(t, headgate.Envelope{ID: "j1", Queue: "q", Payload: mustMsgpack(t, map[string]any{"a": 1})})
	unsafe := regexp.MustCompile(`(?i)\sstyle=|\son[a-z]+=|<style|https?://|javascript:`)
	script := regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`)
	for _, path := range []string{"/", "/queues/q/available", "/jobs/j1", "/quarantine", "/rates", "/policy", "/workflows", "/workers", "/cron", "/queues/q/tenants", "/jobs/missing"} {
		res := b.get(t, path)
		if m := unsafe.FindString(res.body); m != "" {
			t.Errorf("GET %s: %q would need an unsafe CSP", path, m)
		}
		for _, m := range script.FindAllStringSubmatch(res.body, -1) {
			if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
				t.Errorf("GET %s: inline script %q", path, m[0])
			}
		}
		if res.header.Get("Content-Security-Policy") == "" || res.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: security headers %v", path, res.header)
		}
	}
	for _, asset := range []string{"/static/app.js", "/static/style.css"} {
		if res := b.get(t, asset); res.status != http.StatusOK || len(res.body) < 100 {
			t.Errorf("GET %s: %d, %d bytes", asset, res.status, len(res.body))
		}
	}
}

func mustMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	p, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestJobsListing(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.enqueue(t,
		headgate.Envelope{ID: "j1", Queue: "q", Kind: "email", PartitionKey: "acme", Tags: []string{"vip"}, Fingerprint: "fp1"},
		headgate.Envelope{ID: "j2", Queue: "q", Kind: "email", PartitionKey: "globex"},
		headgate.Envelope{ID: "j3", Queue: "q", Kind: "sms", PartitionKey: "acme"},
		headgate.Envelope{ID: "j4", Queue: "q", Kind: "sms", PartitionKey: "acme"},
		headgate.Envelope{ID: "other", Queue: "r", PartitionKey: "acme"},
	)
	b.cancel(t, "j4")
	listed := func(query string) []string {
		t.Helper()
		body := b.mustGet(t, "/queues/q/available"+query)
		var ids []string
		for _, m := range regexp.MustCompile(`class="job-link" href="/jobs/([^"]+)"`).FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		return ids
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"j3", "j2", "j1"}},
		{"?order=oldest", []string{"j1", "j2", "j3"}},
		{"?partition=acme", []string{"j3", "j1"}},
		{"?kind=email", []string{"j2", "j1"}},
		{"?tag=vip", []string{"j1"}},
		{"?fingerprint=fp1", []string{"j1"}},
		{"?id=j2", []string{"j2"}},
		{"?id=j4", nil}, // cancelled, not available
		{"?partition=acme&kind=email", []string{"j1"}},
		{"?partition=nobody", nil},
	} {
		if got := listed(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("listing %q = %v, want %v", tc.query, got, tc.want)
		}
	}
	b.mustGet(t, "/queues/q/available", "3 available job(s) in queue q", `<th title="failed attempts so far">Failed</th>`)
	b.mustGet(t, "/queues/q/cancelled", "/jobs/j4")
	if res := b.get(t, "/queues/q/sleeping"); res.status != http.StatusBadRequest || !strings.Contains(res.body, "not a job state") {
		t.Errorf("unknown state: %d %s", res.status, res.body)
	}
	if res := b.get(t, "/queues/q/available?cursor=nope"); res.status != http.StatusBadRequest {
		t.Errorf("bad cursor: %d, want 400", res.status)
	}
}

// TestJobsListingPages pages through more jobs than a page holds: every job once.
func TestJobsListingPages(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	var jobs []headgate.Envelope
	for i := range 180 {
		jobs = append(jobs, headgate.Envelope{ID: fmt.Sprintf("j%03d", i), Queue: "q"})
	}
	b.enqueue(t, jobs...)
	seen := map[string]int{}
	path, pages := "/queues/q/available", 0
	for path != "" {
		pages++
		body := b.mustGet(t, path)
		for _, m := range regexp.MustCompile(`class="job-link" href="/jobs/([^"]+)"`).FindAllStringSubmatch(body, -1) {
			seen[m[1]]++
		}
		path = ""
		if m := regexp.MustCompile(`<a href="([^"]+)" id="next-page">`).FindStringSubmatch(body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		if pages > 100 {
			t.Fatal("listing does not end")
		}
	}
	if len(seen) != 180 {
		t.Errorf("listed %d distinct jobs in %d pages, want 180", len(seen), pages)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %s listed %d times", id, n)
		}
	}
}

func TestJobPage(t *testing.T) {
	t.Parallel()
	redact := func(kind string, v any) any {
		if m, ok := v.(map[string]any); ok && kind == "charge" {
			m["card"] = "[redacted]"
		}
		return v
	}
	b := setup(t, dashboard.Config{Redact: redact})
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "q", Kind: "charge", Retention: time.Hour, Tags: []string{"vip"},
		PartitionKey: "acme", Payload: mustMsgpack(t, map[string]any{"amount": 42, "card": "4111111111111111"})})
	claims, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "lease-1", Queues: []string{"q"}, Capacity: 1, Lease: time.Minute})
	if err != nil || len(claims) != 1 {
		t.Fatalf("Admit = %v, %v", claims, err)
	}
	c := claims[0]
	if _, err := b.store.WriteOutput(b.ctx, c.LeaseRef(), headgate.Blob{SchemaVersion: 1, Bytes: []byte("partial output")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.WriteProgress(b.ctx, c.LeaseRef(), headgate.Progress{Current: 3, Total: 10, Message: "copying"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Ack(b.ctx, c.LeaseRef(), headgate.OutcomeRetry,
		&headgate.AckOpts{Error: "gateway timeout", Delay: time.Second, Logs: []string{"dialing gateway"}}); err != nil {
		t.Fatal(err)
	}
	body := b.mustGet(t, "/jobs/j",
		`<strong id="job-state">retryable</strong>`,
		"&#34;amount&#34;: 42", "[redacted]", // the payload as JSON, the card hidden
		"gateway timeout", "dialing gateway", "<th>Lease</th>", "<td>lease-1</td>", // the error history, by lease id
		`<progress value="3" max="10">`, "copying", "partial output",
		"<th>PartitionKey</th><td>acme</td>", "<th>Attempt</th><td>1</td>", "<th>Tags</th><td>vip</td>", "<th>MaxAttempts</th>",
	)
	if strings.Contains(body, "4111") {
		t.Error("the job page shows the redacted card number")
	}
	if res := b.get(t, "/jobs/missing"); res.status != http.StatusNotFound {
		t.Errorf("missing job: %d, want 404", res.status)
	}
}

func TestJobPageResult(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	// A payload that is not msgpack shows as hex, also one whose header declares 2^32
	// elements (decoding it would exhaust memory).
	b.enqueue(t, headgate.Envelope{ID: "a/b c", Queue: "q", Retention: time.Hour, Payload: []byte{0xc1, 0xff}},
		headgate.Envelope{ID: "hostile", Queue: "r", Payload: []byte{0xdd, 0xff, 0xff, 0xff, 0xff}})
	b.mustGet(t, "/jobs/hostile", "5 bytes: ddffffffff")
	claims, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"q"}, Capacity: 1, Lease: time.Minute})
	if err != nil || len(claims) != 1 {
		t.Fatalf("Admit = %v, %v", claims, err)
	}
	if _, err := b.store.Ack(b.ctx, claims[0].LeaseRef(), headgate.OutcomeSuccess,
		&headgate.AckOpts{Result: &headgate.Blob{SchemaVersion: 1, Bytes: mustMsgpack(t, []any{"ok", 7})}}); err != nil {
		t.Fatal(err)
	}
	// An id with a slash and a space round-trips through its link.
	b.mustGet(t, "/jobs/a/b%20c", "completed", "2 bytes: c1ff", "&#34;ok&#34;,\n  7")
}

func TestQuarantine(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.quarantine(t, "import:42", "crasher", "sibling")
	b.mustGet(t, "/quarantine", "import:42", `href="/jobs/crasher"`, "Release and retry")

	op := b.act(t, "/quarantine/release", url.Values{"fingerprint": {"import:42"}})
	if op.Done != 1 || !strings.Contains(op.Result, "1 held jobs") {
		t.Errorf("release = %+v", op)
	}
	if st := b.state(t, "crasher"); st != headgate.StateQuarantined {
		t.Errorf("crasher after release is %s, want still quarantined", st)
	}
	b.quarantine(t, "import:43", "crasher2", "sibling2")
	op = b.act(t, "/quarantine/release", url.Values{"fingerprint": {"import:43"}, "retry": {"1"}})
	if op.Done != 1 || b.state(t, "crasher2") != headgate.StateAvailable {
		t.Errorf("release and retry = %+v, crasher2 %s", op, b.state(t, "crasher2"))
	}
	if !strings.Contains(b.log.String(), "action=release-quarantine-and-retry") {
		t.Errorf("log lacks the release:\n%s", b.log)
	}
	// Release and retry of a fingerprint whose crashed job was retried already lifts the
	// quarantine: it says so, not that nothing was released.
	b.quarantine(t, "import:44", "crasher3", "sibling3")
	if _, err := b.store.Retry(b.ctx, "crasher3", nil); err != nil { // held: the fingerprint stays quarantined
		t.Fatal(err)
	}
	op = b.act(t, "/quarantine/release", url.Values{"fingerprint": {"import:44"}, "retry": {"1"}})
	if q, err := b.store.Quarantined(b.ctx); err != nil || len(q) != 0 {
		t.Fatalf("quarantined after release and retry: %v, %v", q, err)
	}
	if op.Done != 1 || op.Refused != 0 || !strings.Contains(op.Result, "released import:44") ||
		!strings.Contains(op.Result, "no job retried") {
		t.Errorf("release and retry of a fingerprint whose job was retried already = %+v, want it released, no job retried", op)
	}
	// A retry of everything quarantined says that the jobs whose fingerprint stays
	// quarantined wait held.
	b.quarantine(t, "import:45", "crasher4", "sibling4")
	op = b.act(t, "/jobs", url.Values{"action": {"retry"}, "scope": {"matching"}, "queue": {"q-45"}, "state": {"quarantined"}, "confirm": {"1"}})
	if op.Done != 1 || !strings.Contains(op.Result, "waits, held with its siblings") {
		t.Errorf("retry of the quarantined jobs = %+v, want it to say they wait held", op)
	}
	// A fingerprint not in quarantine is refused, as by the command, not counted released.
	for _, form := range []url.Values{{"fingerprint": {"never"}}, {"fingerprint": {"never"}, "retry": {"1"}}} {
		op = b.act(t, "/quarantine/release", form)
		if op.Done != 0 || op.Refused != 1 || len(op.Errors) != 1 ||
			!strings.Contains(op.Errors[0], `fingerprint "never" is not quarantined; nothing released`) {
			t.Errorf("release (%v) of a fingerprint not in quarantine = %+v, want it refused", form, op)
		}
	}
}

// TestHeldListing: the available jobs a quarantined fingerprint holds back, which the
// overview counts in its Held column, are listed from it as a state of their own (as
// headgate jobs -state held lists them), counted, and acted on by filter.
func TestHeldListing(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.quarantine(t, "import:42", "crasher", "sibling")
	b.enqueue(t, headgate.Envelope{ID: "free", Queue: "q-42"})
	b.mustGet(t, "/", `<a data-held href="/queues/q-42/held">1</a>`)
	b.mustGet(t, "/queues/q-42/held", `href="/jobs/sibling"`, "1 held job(s) in queue q-42",
		`<a href="/queues/q-42/held" class="current">held</a>`)
	if body := b.mustGet(t, "/queues/q-42/available", `href="/jobs/free"`); strings.Contains(body, `href="/jobs/sibling"`) {
		t.Errorf("the available listing shows the held sibling:\n%s", body)
	}
	b.mustGet(t, "/queues/q-42/held?id=sibling", `href="/jobs/sibling"`)
	if body := b.mustGet(t, "/queues/q-42/available?id=sibling"); strings.Contains(body, `href="/jobs/sibling"`) {
		t.Errorf("an id filter on available finds the held sibling:\n%s", body)
	}
	form := url.Values{"action": {"cancel"}, "scope": {"matching"}, "queue": {"q-42"}, "state": {"held"}}
	if res := b.post(t, "/jobs", form); res.status != http.StatusOK ||
		!strings.Contains(res.body, "cancel every held job of queue q-42: 1 job(s).") {
		t.Fatalf("confirmation: %d %s", res.status, res.body)
	}
	if op := b.act(t, "/jobs", form); op.Done != 1 || op.Total != 1 {
		t.Errorf("cancel of the held jobs = %+v, want the sibling", op)
	}
	if st, free := b.state(t, "sibling"), b.state(t, "free"); st != headgate.StateCancelled || free != headgate.StateAvailable {
		t.Errorf("after the cancel: sibling %s, free %s; want cancelled, available", st, free)
	}
}

// progress.json holds every field README lists, also those without a value: user ""
// when the dashboard does not know who acted, errors [] when nothing was refused,
// result "" when the action has no summary to give.
func TestProgressJSONHasEveryField(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "q"})
	res := b.post(t, "/jobs", url.Values{"action": {"cancel"}, "job": {"j"}, "confirm": {"1"}})
	if res.status != http.StatusSeeOther {
		t.Fatalf("cancel: %d %s", res.status, res.body)
	}
	res = b.get(t, res.header.Get("Location")+"/progress.json?wait=10000")
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(res.body), &doc); err != nil {
		t.Fatalf("progress.json: %v in %q", err, res.body)
	}
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"action", "back", "done", "errors", "finished", "id", "processed", "refused", "result", "skipped",
		"started", "target", "total", "user"}
	if !slices.Equal(keys, want) {
		t.Errorf("progress.json has %v, want %v:\n%s", keys, want, res.body)
	}
	if string(doc["user"]) != `""` || string(doc["errors"]) != "[]" || string(doc["finished"]) != "true" ||
		string(doc["done"]) != "1" || string(doc["result"]) != `""` {
		t.Errorf("progress.json = %s; want user \"\", errors [], one done, finished, result \"\"", res.body)
	}
}

// quarantine makes crasher crash into the limit so its fingerprint holds sibling.
func (b *testBundle) quarantine(t *testing.T, fp, crasher, sibling string) {
	t.Helper()
	q := "q-" + fp[len(fp)-2:]
	b.enqueue(t, headgate.Envelope{ID: crasher, Queue: q, Fingerprint: fp, Priority: 10},
		headgate.Envelope{ID: sibling, Queue: q, Fingerprint: fp})
	if c, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l-" + crasher, Queues: []string{q}, Capacity: 1, Lease: time.Minute}); err != nil || len(c) != 1 {
		t.Fatalf("Admit = %v, %v", c, err)
	}
	if err := b.store.AdvanceClock(b.ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if r, err := b.store.ReclaimExpired(b.ctx, 10); err != nil || len(r) != 1 || !r[0].Quarantined {
		t.Fatalf("ReclaimExpired = %+v, %v", r, err)
	}
	if c, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l2-" + crasher, Queues: []string{q}, Capacity: 1, Lease: time.Minute}); err != nil || len(c) != 0 {
		t.Fatalf("Admit after quarantine = %v, %v; want the sibling held", c, err)
	}
}

func TestRatesAndPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{RateClasses: []string{"api", "free"}})
	if err := b.store.SetRateLimit(b.ctx, "api", headgate.RateLimit{Limit: 10, Window: time.Second, Burst: 20}); err != nil {
		t.Fatal(err)
	}
	b.mustGet(t, "/rates", "<td>api</td><td class=\"num\">20</td>", "<td>free</td><td class=\"num\">unlimited")
	if err := b.store.SetPolicy(b.ctx, &headgate.Policy{RetryBase: 2 * time.Second, RetryCap: time.Hour, CrashLimit: 3,
		CrashRetryBase: time.Second, SnoozeLimit: 5, RetentionArchived: 7 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	// As headgate policy shows it: the fields as the command names them, durations in the
	// compact form, and where each value comes from.
	b.mustGet(t, "/policy", `<tr data-field="retry_base"><th>retry_base</th><td>2s</td><td>namespace</td></tr>`,
		`<tr data-field="crash_limit"><th>crash_limit</th><td>3</td><td>namespace</td></tr>`,
		`<tr data-field="ret_archived"><th>ret_archived</th><td>7d</td><td>namespace</td></tr>`)
}

func TestBulkRetrySelection(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.enqueue(t, headgate.Envelope{ID: "j1", Queue: "q"}, headgate.Envelope{ID: "j2", Queue: "q"}, headgate.Envelope{ID: "j3", Queue: "q"})
	b.cancel(t, "j1", "j2", "j3")
	b.mustGet(t, "/queues/q/cancelled", `name="job" value="j1"`, `id="bulk-retry"`, "everything matching the filter (3)")

	form := url.Values{"action": {"retry"}, "scope": {"selected"}, "job": {"j1", "j3"}, "back": {"/queues/q/cancelled"}}
	res := b.post(t, "/jobs", form)
	if res.status != http.StatusOK || !strings.Contains(res.body, "retry 2 selected job(s): 2 job(s).") {
		t.Fatalf("confirmation: %d %s", res.status, res.body)
	}
	if b.state(t, "j1") != headgate.StateCancelled {
		t.Fatal("the confirmation page changed a job")
	}
	op := b.act(t, "/jobs", form)
	if op.Done != 2 || op.Refused != 0 || op.Total != 2 {
		t.Errorf("operation = %+v, want 2 retried", op)
	}
	for id, want := range map[string]headgate.State{"j1": headgate.StateAvailable, "j2": headgate.StateCancelled, "j3": headgate.StateAvailable} {
		if got := b.state(t, id); got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}
	if l := b.log.String(); !strings.Contains(l, "action=retry") || !strings.Contains(l, "changed=2") || !strings.Contains(l, `target="2 selected job(s)"`) {
		t.Errorf("log lacks the action:\n%s", l)
	}

	// A refusal per job is counted and shown, the others proceed.
	op = b.act(t, "/jobs", url.Values{"action": {"retry"}, "job": {"j1", "j2", "ghost"}})
	if op.Done != 1 || op.Refused != 2 || len(op.Errors) != 2 {
		t.Errorf("mixed retry = %+v, want 1 done, 2 refused", op)
	}
}

func TestBulkActionsByFilter(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	var jobs []headgate.Envelope
	var ids []string
	for i := range 130 {
		part := "acme"
		if i%3 == 0 {
			part = "globex"
		}
		id := fmt.Sprintf("j%03d", i)
		jobs = append(jobs, headgate.Envelope{ID: id, Queue: "q", PartitionKey: part})
		ids = append(ids, id)
	}
	b.enqueue(t, jobs...)
	b.cancel(t, ids...)
	b.mustGet(t, "/queues/q/cancelled?partition=acme", "everything matching the filter (86)")
	// The page's checked boxes travel along; everything matching is what counts.
	form := url.Values{"action": {"retry"}, "scope": {"matching"}, "queue": {"q"}, "state": {"cancelled"}, "partition": {"acme"},
		"job": {"j001", "j002"}, "id": {""}}
	res := b.post(t, "/jobs", form)
	// A partition alone is counted exactly (its counts); a kind is only bounded by the state's.
	if res.status != http.StatusOK || !strings.Contains(res.body, "retry every cancelled job of queue q with partition acme: 86 job(s).") {
		t.Fatalf("confirmation: %d %s", res.status, res.body)
	}
	op := b.act(t, "/jobs", form)
	if op.Done != 86 || op.Refused != 0 || op.Skipped != 0 || op.Total != 86 || op.Result != "1 batch(es)." {
		t.Errorf("retry by filter = %+v, want the 86 acme jobs in one batch", op)
	}
	// The store's bulk verb did it (the inspector audits each bulk run).
	if l := b.log.String(); !strings.Contains(l, "jobs retried by filter") || !strings.Contains(l, "changed=86") {
		t.Errorf("log lacks the bulk retry:\n%s", l)
	}
	res = b.post(t, "/jobs", url.Values{"action": {"retry"}, "scope": {"matching"}, "queue": {"q"}, "state": {"cancelled"}, "kind": {"test"}})
	if res.status != http.StatusOK || !strings.Contains(res.body, "with kind test: up to 44 job(s).") {
		t.Fatalf("confirmation by kind: %d %s", res.status, res.body)
	}
	for i, id := range ids {
		want := headgate.StateAvailable
		if i%3 == 0 {
			want = headgate.StateCancelled
		}
		if got := b.state(t, id); got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}
	op = b.act(t, "/jobs", url.Values{"action": {"delete"}, "scope": {"matching"}, "queue": {"q"}, "state": {"cancelled"}})
	if op.Done != 44 {
		t.Errorf("delete by filter = %+v, want the 44 globex jobs", op)
	}
	op = b.act(t, "/jobs", url.Values{"action": {"cancel"}, "scope": {"matching"}, "queue": {"q"}, "state": {"available"}, "kind": {"test"}})
	if op.Done != 86 || b.state(t, ids[1]) != headgate.StateCancelled {
		t.Errorf("cancel by filter = %+v", op)
	}
}

// TestBulkActionSkips: everything matching counts the jobs the bulk verb left alone
// apart from those it changed, and an id filter acts on that one job.
func TestBulkActionSkips(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.enqueue(t, headgate.Envelope{ID: "old", Queue: "q", UniqueKey: "report"}, headgate.Envelope{ID: "other", Queue: "q"})
	b.cancel(t, "old", "other")
	b.enqueue(t, headgate.Envelope{ID: "new", Queue: "q", UniqueKey: "report"}) // takes the key "old" held
	op := b.act(t, "/jobs", url.Values{"action": {"retry"}, "scope": {"matching"}, "queue": {"q"}, "state": {"cancelled"}})
	if op.Done != 1 || op.Skipped != 1 || op.Refused != 0 || op.Total != 2 || op.Processed != 2 {
		t.Errorf("retry = %+v, want 1 retried and old skipped", op)
	}
	if b.state(t, "old") != headgate.StateCancelled || b.state(t, "other") != headgate.StateAvailable {
		t.Errorf("old %s, other %s: want cancelled, available", b.state(t, "old"), b.state(t, "other"))
	}
	res := b.post(t, "/jobs", url.Values{"action": {"delete"}, "scope": {"matching"}, "queue": {"q"}, "state": {"cancelled"}, "id": {"old"}})
	if res.status != http.StatusOK || !strings.Contains(res.body, "with id old: up to 1 job(s).") {
		t.Fatalf("confirmation by id: %d %s", res.status, res.body)
	}
	op = b.act(t, "/jobs", url.Values{"action": {"delete"}, "scope": {"matching"}, "queue": {"q"}, "state": {"cancelled"}, "id": {"old"}})
	if op.Done != 1 || b.state(t, "old") != "deleted" || b.state(t, "new") != headgate.StateAvailable {
		t.Errorf("delete by id = %+v; old %s, new %s", op, b.state(t, "old"), b.state(t, "new"))
	}
}

func TestQueueActions(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "q"})
	b.mustGet(t, "/", `action="/queues/q/pause"`)
	if op := b.act(t, "/queues/q/pause", url.Values{}); op.Done != 1 {
		t.Errorf("pause = %+v", op)
	}
	b.mustGet(t, "/", `action="/queues/q/resume"`, "paused")
	// A paused queue paused again (a page left open, a second operator) changed nothing,
	// and the operation says so rather than counting it changed.
	if op := b.act(t, "/queues/q/pause", url.Values{}); op.Done != 0 || op.Skipped != 1 || op.Result != "queue q was paused already" {
		t.Errorf("second pause = %+v, want nothing changed, one skipped", op)
	}
	if op := b.act(t, "/queues/q/resume", url.Values{}); op.Done != 1 || op.Result != "queue q resumed" {
		t.Errorf("resume = %+v", op)
	}
	if op := b.act(t, "/queues/q/resume", url.Values{}); op.Done != 0 || op.Skipped != 1 || op.Result != "queue q was running already" {
		t.Errorf("second resume = %+v, want nothing changed, one skipped", op)
	}
	b.mustGet(t, "/", `action="/queues/q/pause"`)
	// Only the two that changed the queue are logged.
	if l := b.log.String(); strings.Count(l, `msg="dashboard action"`) != 2 || strings.Contains(l, "changed=0") {
		t.Errorf("log of two changes and two no-ops:\n%s", l)
	}
	// A queue the namespace does not know is refused, not brought into being paused.
	if res := b.post(t, "/queues/nope/pause", url.Values{"confirm": {"1"}}); res.status != http.StatusNotFound ||
		!strings.Contains(res.body, "no queue &#34;nope&#34;") {
		t.Errorf("pause of an unknown queue: %d %s, want 404 naming it", res.status, res.body)
	}
	if body := b.mustGet(t, "/"); strings.Contains(body, "/queues/nope") {
		t.Errorf("the refused pause created queue nope:\n%s", body)
	}
	// Its pages are not found either, naming the queues there are, not empty pages.
	for _, path := range []string{"/queues/nope/available", "/queues/nope/tenants"} {
		if res := b.get(t, path); res.status != http.StatusNotFound || !strings.Contains(res.body, "no queue &#34;nope&#34;") ||
			!strings.Contains(res.body, "its queues: q") {
			t.Errorf("%s: %d %s, want 404 naming queue q", path, res.status, res.body)
		}
	}
}

// everyAction is a form for each action route, each valid with the jobs of seedActions.
var everyAction = []struct {
	path string
	form url.Values
}{
	{"/jobs", url.Values{"action": {"retry"}, "job": {"done"}, "confirm": {"1"}}},
	{"/jobs", url.Values{"action": {"delete"}, "job": {"done"}, "confirm": {"1"}}},
	{"/jobs", url.Values{"action": {"cancel"}, "job": {"waiting"}, "confirm": {"1"}}},
	{"/jobs", url.Values{"action": {"retry"}, "scope": {"matching"}, "queue": {"q"}, "state": {"cancelled"}, "confirm": {"1"}}},
	{"/queues/q/pause", url.Values{}},
	{"/queues/q/resume", url.Values{}},
	{"/quarantine/release", url.Values{"fingerprint": {"fp"}}},
	{"/quarantine/release", url.Values{"fingerprint": {"fp"}, "retry": {"1"}}},
	{"/cron/pause", url.Values{"name": {"nightly"}}},
	{"/cron/resume", url.Values{"name": {"nightly"}}},
	{"/cron/run", url.Values{"name": {"nightly"}}},
}

func (b *testBundle) seedActions(t *testing.T) {
	b.enqueue(t, headgate.Envelope{ID: "done", Queue: "q"}, headgate.Envelope{ID: "waiting", Queue: "q"})
	b.cancel(t, "done")
	b.addSchedule(t, "nightly")
}

// addSchedule adds an active schedule that ticks every minute from epoch.
func (b *testBundle) addSchedule(t *testing.T, name string) {
	t.Helper()
	if _, err := b.store.AddSchedule(b.ctx, headgate.Schedule{Name: name, Interval: time.Minute, Start: epoch,
		Job: headgate.Envelope{Kind: "report", Queue: "q"}}); err != nil {
		t.Fatalf("AddSchedule(%s): %v", name, err)
	}
}

// unchanged checks that the refused requests left the jobs of seedActions as they were.
func (b *testBundle) unchanged(t *testing.T) {
	t.Helper()
	if b.state(t, "done") != headgate.StateCancelled || b.state(t, "waiting") != headgate.StateAvailable {
		t.Errorf("a refused action changed a job: done %s, waiting %s", b.state(t, "done"), b.state(t, "waiting"))
	}
	stats, err := b.store.QueueStats(b.ctx)
	if err != nil || len(stats) != 1 || stats[0].Paused {
		t.Errorf("a refused action changed the queue: %+v, %v", stats, err)
	}
	if sc, err := b.store.GetSchedule(b.ctx, "nightly"); err != nil || sc.Paused || sc.Runs != 0 {
		t.Errorf("a refused action changed the schedule: %+v, %v", sc, err)
	}
	if strings.Contains(b.log.String(), "dashboard action") {
		t.Errorf("a refused action was logged as done:\n%s", b.log)
	}
}

func TestReadOnlyRefusesActions(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.seedActions(t)
	for _, a := range everyAction {
		res := b.post(t, a.path, a.form)
		if res.status != http.StatusForbidden || !strings.Contains(res.body, "read-only") {
			t.Errorf("POST %s %v in read-only mode: %d %s", a.path, a.form, res.status, res.body)
		}
	}
	b.unchanged(t)
	for _, path := range []string{"/", "/queues/q/cancelled", "/jobs/done", "/quarantine", "/cron"} {
		if body := b.mustGet(t, path); strings.Contains(body, "<button") && !strings.Contains(body, "<button>Filter</button>") {
			t.Errorf("read-only %s shows an action button", path)
		}
	}
	// Mutations are POSTs only: another method changes nothing either.
	r := httptest.NewRequest(http.MethodDelete, "/jobs/done", nil)
	if res := b.do(t, r); res.status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d, want 405", res.status)
	}
	r = httptest.NewRequest(http.MethodGet, "/queues/q/pause", nil)
	if res := b.do(t, r); res.status == http.StatusSeeOther || res.status == http.StatusOK {
		t.Errorf("GET of an action: %d", res.status)
	}
	b.unchanged(t)
}

func TestCrossOriginActionsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.seedActions(t)
	for _, a := range everyAction {
		for name, edit := range map[string]func(*http.Request){
			"cross-site fetch": func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
			"same-site fetch":  func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") },
			"foreign origin": func(r *http.Request) {
				r.Header.Del("Sec-Fetch-Site")
				r.Header.Set("Origin", "https://evil.example")
			},
		} {
			res := b.post(t, a.path, a.form, edit)
			if res.status != http.StatusForbidden || !strings.Contains(res.body, "cross-origin") {
				t.Errorf("POST %s %v, %s: %d %s", a.path, a.form, name, res.status, res.body)
			}
		}
	}
	b.unchanged(t)
}

func TestActionsBeyondLoopbackNeedAuthorize(t *testing.T) {
	t.Parallel()
	remote := func(r *http.Request) { r.RemoteAddr = "10.1.2.3:5000" }
	b := setup(t, dashboard.Config{AllowActions: true})
	b.seedActions(t)
	for _, a := range everyAction {
		if res := b.post(t, a.path, a.form, remote); res.status != http.StatusForbidden || !strings.Contains(res.body, "Config.Authorize") {
			t.Errorf("POST %s from another host: %d %s", a.path, res.status, res.body)
		}
	}
	b.unchanged(t)
	if res := b.do(t, func() *http.Request { r := httptest.NewRequest(http.MethodGet, "/", nil); remote(r); return r }()); res.status != http.StatusOK {
		t.Errorf("a read from another host: %d, want 200", res.status)
	}

	// A resolver decides per user and per action.
	var asked []dashboard.Action
	var mu sync.Mutex
	authorize := func(r *http.Request, a dashboard.Action) (string, error) {
		mu.Lock()
		asked = append(asked, a)
		mu.Unlock()
		switch user := r.Header.Get("X-User"); {
		case user == "":
			return "", errors.New("sign in first")
		case a == dashboard.ActionDelete && user != "admin":
			return "", fmt.Errorf("%s may not delete", user)
		default:
			return user, nil
		}
	}
	b = setup(t, dashboard.Config{AllowActions: true, Authorize: authorize})
	b.seedActions(t)
	as := func(user string) func(*http.Request) {
		return func(r *http.Request) { remote(r); r.Header.Set("X-User", user) }
	}
	if res := b.post(t, "/jobs", url.Values{"action": {"delete"}, "job": {"done"}, "confirm": {"1"}}, as("oncall")); res.status != http.StatusForbidden || !strings.Contains(res.body, "oncall may not delete") {
		t.Errorf("delete by oncall: %d %s", res.status, res.body)
	}
	if res := b.do(t, httptest.NewRequest(http.MethodGet, "/", nil)); res.status != http.StatusForbidden || !strings.Contains(res.body, "sign in first") {
		t.Errorf("anonymous read with a resolver: %d", res.status)
	}
	b.unchanged(t)
	res := b.post(t, "/jobs", url.Values{"action": {"retry"}, "job": {"done"}, "confirm": {"1"}}, as("oncall"))
	if res.status != http.StatusSeeOther {
		t.Fatalf("retry by oncall: %d %s", res.status, res.body)
	}
	r := httptest.NewRequest(http.MethodGet, res.header.Get("Location")+"/progress.json?wait=10000", nil)
	as("oncall")(r)
	if res := b.do(t, r); !strings.Contains(res.body, `"done":1`) {
		t.Errorf("retry by oncall: %s", res.body)
	}
	if st := b.state(t, "done"); st != headgate.StateAvailable {
		t.Errorf("retried job is %s", st)
	}
	if l := b.log.String(); !strings.Contains(l, "user=oncall") || !strings.Contains(l, "action=retry") {
		t.Errorf("log lacks who retried:\n%s", l)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(asked, dashboard.ActionView) || !slices.Contains(asked, dashboard.ActionRetry) || !slices.Contains(asked, dashboard.ActionDelete) {
		t.Errorf("resolver asked about %v", asked)
	}
}

func TestMountedUnderPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "q"})
	b.h = http.StripPrefix("/admin/jobs", b.h)
	body := b.mustGet(t, "/admin/jobs/", `href="/admin/jobs/static/style.css"`, `href="/admin/jobs/queues/q/available"`,
		`action="/admin/jobs/queues/q/pause"`)
	_ = body
	b.mustGet(t, "/admin/jobs/queues/q/available", `href="/admin/jobs/jobs/j"`, `action="/admin/jobs/jobs"`)
	res := b.post(t, "/admin/jobs/jobs", url.Values{"action": {"cancel"}, "job": {"j"}, "confirm": {"1"}})
	if loc := res.header.Get("Location"); !strings.HasPrefix(loc, "/admin/jobs/operations/") {
		t.Errorf("operation under the prefix: %d %q", res.status, loc)
	}
}

func TestWorkflows(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	appendEvents := func(id string, expected int64, events ...headgate.Event) {
		t.Helper()
		for i := range events {
			events[i].Seq = expected + int64(i) + 1
		}
		if err := b.store.Append(b.ctx, id, events, expected); err != nil {
			t.Fatalf("Append(%s): %v", id, err)
		}
	}
	appendEvents("order-1", 0,
		headgate.Event{Kind: headgate.EventWorkflowStarted, WorkflowType: "checkout", RunID: "r1", Input: mustMsgpack(t, map[string]any{"cart": 7})},
		headgate.Event{Kind: headgate.EventStepScheduled, Name: "charge", Attempt: 1},
		headgate.Event{Kind: headgate.EventStepFailed, Name: "charge", Attempt: 1, Error: &headgate.WorkflowError{Message: "card declined"}},
		headgate.Event{Kind: headgate.EventTimerStarted, TimerID: "backoff", FireAt: epoch.Add(time.Minute)},
	)
	appendEvents("order-2", 0, headgate.Event{Kind: headgate.EventWorkflowStarted, WorkflowType: "refund", RunID: "r1"})
	appendEvents("order-2", 1, headgate.Event{Kind: headgate.EventWorkflowCompleted, Result: []byte("refunded")})

	links := func(query string) []string {
		t.Helper()
		body := b.mustGet(t, "/workflows"+query)
		var ids []string
		for _, m := range regexp.MustCompile(`class="workflow-link" href="/workflows/([^"]+)"`).FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		return ids
	}
	for query, want := range map[string][]string{
		"":                            {"order-1", "order-2"},
		"?type=checkout":              {"order-1"},
		"?status=completed":           {"order-2"},
		"?status=running":             {"order-1"},
		"?type=refund&status=running": nil,
	} {
		if got := links(query); !slices.Equal(got, want) {
			t.Errorf("workflows%s = %v, want %v", query, got, want)
		}
	}
	b.mustGet(t, "/workflows/order-1", `id="workflow-status">running<`, "<strong>step_failed</strong> charge (attempt 1)",
		"card declined", "&#34;cart&#34;: 7", "backoff", "#4")
	b.mustGet(t, "/workflows/order-2", "completed", "refunded")
	if res := b.get(t, "/workflows/none"); res.status != http.StatusNotFound {
		t.Errorf("unknown workflow: %d, want 404", res.status)
	}
	if res := b.get(t, "/workflows?status=sleepy"); res.status != http.StatusBadRequest {
		t.Errorf("unknown status: %d, want 400", res.status)
	}
}

// A workflow's input, result and signal payloads are the JSON the runtime recorded: a
// one-digit number is that number, not the msgpack integer its byte also reads as.
func TestWorkflowJSONDigits(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	events := []headgate.Event{
		{Seq: 1, Kind: headgate.EventWorkflowStarted, WorkflowType: "countdown", RunID: "r1", Input: []byte("7")},
		{Seq: 2, Kind: headgate.EventSignalReceived, Name: "tick", Payload: []byte("3")},
		{Seq: 3, Kind: headgate.EventWorkflowCompleted, Result: []byte("0")},
	}
	if err := b.store.Append(b.ctx, "count-1", events, 0); err != nil {
		t.Fatal(err)
	}
	body := b.mustGet(t, "/workflows/count-1", "<dt>Input</dt><dd>7</dd>", "<dt>Payload</dt><dd>3</dd>", "<dt>Result</dt><dd>0</dd>")
	for _, wrong := range []string{"<dd>55</dd>", "<dd>51</dd>", "<dd>48</dd>"} {
		if strings.Contains(body, wrong) {
			t.Errorf("the workflow page shows %s, a JSON digit read as msgpack", wrong)
		}
	}
}

// The operation page links back only into the dashboard, whatever the form says.
func TestOperationBackLink(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "q"})
	for back, want := range map[string]string{
		"/queues/q/available?kind=x": `href="/queues/q/available?kind=x" id="op-back"`,
		"https://evil.example/":      `href="/" id="op-back"`,
		"//evil.example/":            `href="/" id="op-back"`,
		"/\\evil.example/":           `href="/" id="op-back"`,
		"javascript:alert(1)":        `href="/" id="op-back"`,
	} {
		res := b.post(t, "/jobs", url.Values{"action": {"cancel"}, "job": {"j"}, "back": {back}, "confirm": {"1"}})
		if res.status != http.StatusSeeOther {
			t.Fatalf("cancel: %d %s", res.status, res.body)
		}
		b.mustGet(t, res.header.Get("Location"), want)
	}
}

// Redact sees JSON payloads and workflow inputs too; what decodes as neither is hidden.
func TestRedactEverywhere(t *testing.T) {
	t.Parallel()
	var kinds []string
	var mu sync.Mutex
	redact := func(kind string, v any) any {
		mu.Lock()
		kinds = append(kinds, kind)
		mu.Unlock()
		if m, ok := v.(map[string]any); ok {
			if _, ok := m["secret"]; ok {
				m["secret"] = "[redacted]"
			}
		}
		return v
	}
	b := setup(t, dashboard.Config{Redact: redact})
	b.enqueue(t, headgate.Envelope{ID: "json", Queue: "q", Kind: "k", Payload: []byte(`{"secret":"hunter2","n":1}`)},
		headgate.Envelope{ID: "opaque", Queue: "q", Kind: "k", Payload: []byte{0xc1, 0x00, 0x01}})
	if body := b.mustGet(t, "/jobs/json", "[redacted]"); strings.Contains(body, "hunter2") {
		t.Error("JSON payload not redacted")
	}
	if body := b.mustGet(t, "/jobs/opaque", "hidden by the redaction hook"); strings.Contains(body, "c10001") {
		t.Error("an undecodable payload is shown with a redaction hook")
	}
	events := []headgate.Event{{Seq: 1, Kind: headgate.EventWorkflowStarted, WorkflowType: "signup", RunID: "r",
		Input: mustMsgpack(t, map[string]any{"secret": "s3cr3t"})}}
	if err := b.store.Append(b.ctx, "w", events, 0); err != nil {
		t.Fatal(err)
	}
	if body := b.mustGet(t, "/workflows/w", "[redacted]"); strings.Contains(body, "s3cr3t") {
		t.Error("workflow input not redacted")
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(kinds, "k") || !slices.Contains(kinds, "signup") {
		t.Errorf("Redact saw kinds %v, want the job's kind and the workflow's type", kinds)
	}
}

func TestJobPageWhy(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.enqueue(t, headgate.Envelope{ID: "waits", Queue: "q"}, headgate.Envelope{ID: "runs", Queue: "r"})
	if err := b.store.PauseQueue(b.ctx, "q"); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	e, err := b.store.Why(b.ctx, "waits", nil)
	if err != nil {
		t.Fatalf("Why: %v", err)
	}
	want := []string{`id="why"`}
	for _, r := range e.Reasons {
		want = append(want, html.EscapeString(r.Sentence(e.Now)))
	}
	body := b.mustGet(t, "/jobs/waits", want...)
	if !strings.Contains(body, "paused") {
		t.Errorf("the job page of a job in a paused queue does not say the queue is paused:\n%s", body)
	}
	if claims, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"r"}, Capacity: 1, Lease: time.Minute}); err != nil || len(claims) != 1 {
		t.Fatalf("Admit = %v, %v", claims, err)
	}
	if body := b.mustGet(t, "/jobs/runs", `<strong id="job-state">running</strong>`); strings.Contains(body, `id="why"`) {
		t.Errorf("the page of a running job explains why it is not running:\n%s", body)
	}
}

func TestWorkersAndUnservedQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.enqueue(t, headgate.Envelope{ID: "m", Queue: "mail"}, headgate.Envelope{ID: "r", Queue: "reports"})
	for _, hb := range []headgate.Heartbeat{
		{ID: "w-live", Host: "host-a", PID: 7, Queues: []string{"mail"}, Kinds: []string{"send"}, Concurrency: 4, InFlight: 1, Started: epoch, Liveness: time.Minute},
		{ID: "w-stopped", Host: "host-b", PID: 8, Queues: []string{"reports"}, Kinds: []string{"render"}, Concurrency: 1, Started: epoch},
	} {
		if _, err := b.store.Heartbeat(b.ctx, hb); err != nil {
			t.Fatalf("Heartbeat(%s): %v", hb.ID, err)
		}
	}
	body := b.mustGet(t, "/workers", "1 live worker(s)", "host-a", "host-b", `<td class="num">1 / 4</td>`, "stopped", `<span class="tag">send</span>`)
	if strings.Index(body, "w-live") > strings.Index(body, "w-stopped") {
		t.Errorf("the workers page lists a stopped worker before the live one:\n%s", body)
	}

	res := b.get(t, "/")
	row := func(queue string) string {
		m := regexp.MustCompile(`(?s)<tr data-queue="` + queue + `">.*?</tr>`).FindString(res.body)
		if m == "" {
			t.Fatalf("overview has no row for %s:\n%s", queue, res.body)
		}
		return m
	}
	if !strings.Contains(res.body, `<span id="live-workers">1</span> live worker(s)`) {
		t.Errorf("overview does not count one live worker:\n%s", res.body)
	}
	if r := row("mail"); !strings.Contains(r, "<span data-live>1</span>") || !strings.Contains(r, `class="unserved" hidden`) {
		t.Errorf("mail row = %s, want 1 live worker, served", r)
	}
	if r := row("reports"); !strings.Contains(r, "<span data-live>0</span>") || strings.Contains(r, `class="unserved" hidden`) {
		t.Errorf("reports row = %s, want 0 live workers, flagged unserved", r)
	}
	var s struct {
		Workers     map[string]int64 `json:"workers"`
		Unserved    map[string]bool  `json:"unserved"`
		LiveWorkers int              `json:"live_workers"`
	}
	js := b.get(t, "/overview.json")
	if err := json.Unmarshal([]byte(js.body), &s); err != nil {
		t.Fatalf("overview.json: %v in %q", err, js.body)
	}
	if s.LiveWorkers != 1 || s.Workers["mail"] != 1 || s.Workers["reports"] != 0 || s.Unserved["mail"] || !s.Unserved["reports"] {
		t.Errorf("overview.json workers = %+v", s)
	}
}

func TestCron(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.addSchedule(t, "nightly")
	row := func() string {
		t.Helper()
		body := b.mustGet(t, "/cron")
		m := regexp.MustCompile(`(?s)<tr data-schedule="nightly">.*?</tr>`).FindString(body)
		if m == "" {
			t.Fatalf("cron page has no row for nightly:\n%s", body)
		}
		return m
	}
	r := row()
	for _, want := range []string{"every 1m", "report → q", "active",
		"<td>2030-01-02 03:05:05.000 UTC</td>", // next due: its first tick, a minute after the add
		`action="/cron/pause"`, `action="/cron/run"`, `name="name" value="nightly"`} {
		if !strings.Contains(r, want) {
			t.Errorf("nightly row lacks %q: %s", want, r)
		}
	}

	if op := b.act(t, "/cron/pause", url.Values{"name": {"nightly"}}); op.Done != 1 || op.Result != "schedule nightly paused" {
		t.Errorf("pause = %+v", op)
	}
	if r := row(); !strings.Contains(r, `<span class="paused">paused</span>`) || !strings.Contains(r, `action="/cron/resume"`) {
		t.Errorf("paused nightly row = %s", r)
	}
	if op := b.act(t, "/cron/pause", url.Values{"name": {"nightly"}}); op.Done != 0 || op.Skipped != 1 || op.Result != "schedule nightly was paused already" {
		t.Errorf("second pause = %+v, want nothing changed, one skipped", op)
	}
	if op := b.act(t, "/cron/resume", url.Values{"name": {"nightly"}}); op.Done != 1 || op.Result != "schedule nightly resumed" {
		t.Errorf("resume = %+v", op)
	}
	op := b.act(t, "/cron/run", url.Values{"name": {"nightly"}})
	sc, err := b.store.GetSchedule(b.ctx, "nightly")
	if err != nil {
		t.Fatalf("GetSchedule: %v", err)
	}
	if op.Done != 1 || sc.Paused || sc.Runs != 1 {
		t.Errorf("run now = %+v; schedule %+v, want one run of an active schedule", op, sc)
	}
	jobs, err := b.store.QueueStats(b.ctx)
	if err != nil || len(jobs) != 1 || jobs[0].Counts[headgate.StateAvailable] != 1 {
		t.Errorf("run now enqueued %+v, %v; want one available job in q", jobs, err)
	}
	for _, want := range []string{"action=pause-schedule", "action=resume-schedule", "action=run-schedule", "schedule nightly"} {
		if !strings.Contains(b.log.String(), want) {
			t.Errorf("action log lacks %q:\n%s", want, b.log)
		}
	}

	if op := b.act(t, "/cron/run", url.Values{"name": {"missing"}}); op.Done != 0 || len(op.Errors) != 1 {
		t.Errorf("run of a missing schedule = %+v, want its error", op)
	}
	if res := b.post(t, "/cron/pause", url.Values{"confirm": {"1"}}); res.status != http.StatusBadRequest {
		t.Errorf("pause without a name: %d, want 400", res.status)
	}
	if res := b.post(t, "/cron/pause", url.Values{"name": {"a{b}"}}); res.status != http.StatusBadRequest {
		t.Errorf("pause of a bad name: %d, want 400", res.status)
	}
}

// TestMatchingActionRefusesStateItCannotTake: an action on everything matching a state its
// bulk verb does not take (retry of available jobs, delete of running ones, cancel of
// finished ones) is a 400 that says so, before any confirmation or operation, and
// changes nothing; the page offers no such button, so only a crafted form gets here.
func TestMatchingActionRefusesStateItCannotTake(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.enqueue(t, headgate.Envelope{ID: "a", Queue: "q"})
	for _, c := range [][2]string{{"retry", "available"}, {"delete", "running"}, {"cancel", "archived"}, {"retry", "held"}} {
		for _, confirm := range []string{"", "1"} {
			res := b.post(t, "/jobs", url.Values{"action": {c[0]}, "scope": {"matching"}, "queue": {"q"}, "state": {c[1]}, "confirm": {confirm}})
			if want := c[0] + " does not take " + c[1] + " jobs"; res.status != http.StatusBadRequest || !strings.Contains(res.body, want) {
				t.Errorf("%s of every %s job (confirm %q): %d, want 400 %q:\n%s", c[0], c[1], confirm, res.status, want, res.body)
			}
		}
	}
	if got := b.state(t, "a"); got != headgate.StateAvailable {
		t.Errorf("a is %s after the refusals, want available", got)
	}
}

// TestJobLinksOfUnusualIDs: a listing's link to each job opens that job's page, under the
// mount prefix, whatever its id: one with an empty, "." or ".." path segment, which the
// router would clean into another id (a//b into a/b) and redirect to without the prefix,
// goes by the query.
func TestJobLinksOfUnusualIDs(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	ids := []string{"a//b", "a/b", "x/../y", "y", ".", "a/", "a b", "é", "a?b#c", "50%", "<x>"}
	for _, id := range ids {
		b.enqueue(t, headgate.Envelope{ID: id, Queue: "q"})
	}
	b.h = http.StripPrefix("/admin", b.h)
	body := b.mustGet(t, "/admin/queues/q/available")
	links := regexp.MustCompile(`<a class="job-link" href="([^"]*)">([^<]*)</a>`).FindAllStringSubmatch(body, -1)
	if len(links) != len(ids) {
		t.Fatalf("listing links %d jobs, want %d:\n%s", len(links), len(ids), body)
	}
	for _, l := range links {
		href, id := html.UnescapeString(l[1]), html.UnescapeString(l[2])
		res := b.get(t, href)
		if res.status != http.StatusOK {
			t.Errorf("job %q: GET %s: %d (Location %q), want its page", id, href, res.status, res.header.Get("Location"))
			continue
		}
		if want := "<title>Job " + html.EscapeString(id) + " · "; !strings.Contains(res.body, want) {
			t.Errorf("job %q: GET %s shows another page, lacks %q", id, href, want)
		}
	}

	// A workflow's link too, and its history's next page keeps its id.
	for _, id := range []string{"w//x", "w/x"} {
		events := make([]headgate.Event, 250)
		events[0] = headgate.Event{Kind: headgate.EventWorkflowStarted, WorkflowType: "odd", RunID: "r1"}
		for i := 1; i < len(events); i++ {
			events[i] = headgate.Event{Kind: headgate.EventStepScheduled, Name: "s", Attempt: i}
		}
		for i := range events {
			events[i].Seq = int64(i) + 1
		}
		if err := b.store.Append(b.ctx, id, events, 0); err != nil {
			t.Fatalf("Append(%s): %v", id, err)
		}
	}
	body = b.mustGet(t, "/admin/workflows")
	wfLinks := regexp.MustCompile(`class="workflow-link" href="([^"]*)">([^<]*)</a>`).FindAllStringSubmatch(body, -1)
	if len(wfLinks) != 2 {
		t.Fatalf("workflows page links %d workflows, want 2:\n%s", len(wfLinks), body)
	}
	for _, l := range wfLinks {
		href, id := html.UnescapeString(l[1]), html.UnescapeString(l[2])
		page := b.mustGet(t, href, "<title>Workflow "+html.EscapeString(id)+" · ")
		next := regexp.MustCompile(`href="([^"]*from=[^"]*)"`).FindStringSubmatch(page)
		if next == nil {
			t.Fatalf("workflow %q: no next page of its history:\n%s", id, page)
		}
		b.mustGet(t, html.UnescapeString(next[1]), "<title>Workflow "+html.EscapeString(id)+" · ", "#201")
	}
}

// TestOverviewQueueLinksOfUnusualNames: the overview's tenants link and pause button of
// a queue whose name holds '/', '?' or '#' reach that queue, not a 404 or another path.
func TestOverviewQueueLinksOfUnusualNames(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	queues := []string{"a/b", "a?b", "a#b", "50%"}
	for _, q := range queues {
		b.enqueue(t, headgate.Envelope{ID: "j-" + q, Queue: q, PartitionKey: "p"})
	}
	body := b.mustGet(t, "/")
	for _, q := range queues {
		row := regexp.MustCompile(`(?s)<tr data-queue="` + regexp.QuoteMeta(html.EscapeString(q)) + `">.*?</tr>`).FindString(body)
		tenants := regexp.MustCompile(`class="tenants-link" href="([^"]*)"`).FindStringSubmatch(row)
		pause := regexp.MustCompile(`action="([^"]*/pause)"`).FindStringSubmatch(row)
		if tenants == nil || pause == nil {
			t.Fatalf("queue %q: no tenants link or pause button in its row %q", q, row)
		}
		b.mustGet(t, html.UnescapeString(tenants[1]), "of queue <a", ">"+html.EscapeString(q)+"</a>")
		if op := b.act(t, html.UnescapeString(pause[1]), url.Values{}); op.Done != 1 || op.Result != "queue "+q+" paused" {
			t.Errorf("queue %q: pause button (%s): %+v, want it paused", q, pause[1], op)
		}
	}
}

// TestJobPageActionsBackLink: each button of a job's page leads, once its operation is
// done, back to a page that exists: the job's own after a retry or cancel, its queue's
// listing after a delete (the job's page is gone with it).
func TestJobPageActionsBackLink(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.enqueue(t, headgate.Envelope{ID: "c", Queue: "q"}, headgate.Envelope{ID: "d", Queue: "q"})
	form := regexp.MustCompile(`(?s)<form method="post" action="/jobs" class="job-actions">.*?</form>`)
	field := regexp.MustCompile(`name="([^"]*)" value="([^"]*)"`)
	for id, action := range map[string]string{"c": "cancel", "d": "delete"} {
		var values url.Values
		for _, f := range form.FindAllString(b.mustGet(t, "/jobs/"+id), -1) {
			if strings.Contains(f, `value="`+action+`"`) {
				values = url.Values{}
				for _, m := range field.FindAllStringSubmatch(f, -1) {
					if m[1] != "action" {
						values.Set(m[1], html.UnescapeString(m[2]))
					}
				}
			}
		}
		if values == nil {
			t.Fatalf("job %s: no %s button on its page", id, action)
		}
		values.Set("action", action)
		values.Set("confirm", "1")
		res := b.post(t, "/jobs", values)
		if res.status != http.StatusSeeOther {
			t.Fatalf("%s %s: %d %s", action, id, res.status, res.body)
		}
		loc := res.header.Get("Location")
		var op struct {
			Back     string
			Done     int64
			Finished bool
		}
		if err := json.Unmarshal([]byte(b.get(t, loc+"/progress.json?wait=10000").body), &op); err != nil {
			t.Fatal(err)
		}
		if !op.Finished || op.Done != 1 {
			t.Fatalf("%s %s: %+v, want it done", action, id, op)
		}
		if back := b.get(t, op.Back); back.status != http.StatusOK {
			t.Errorf("%s %s: the operation's back link %s answers %d, want a page", action, id, op.Back, back.status)
		}
	}
}

// TestPartitionEndingInSpace: the tenants page's link to a partition whose name ends in
// a space lists that partition's jobs, and an action on everything matching it takes
// them alone, not those of the partition without the space.
func TestPartitionEndingInSpace(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowActions: true})
	b.enqueue(t, headgate.Envelope{ID: "spaced", Queue: "q", PartitionKey: "acme "},
		headgate.Envelope{ID: "plain", Queue: "q", PartitionKey: "acme"})
	link := regexp.MustCompile(`<a href="([^"]*)">acme </a>`).FindStringSubmatch(b.mustGet(t, "/queues/q/tenants"))
	if link == nil {
		t.Fatal(`tenants page has no link to partition "acme "`)
	}
	listing := b.mustGet(t, html.UnescapeString(link[1]), ">spaced</a>")
	if strings.Contains(listing, ">plain</a>") {
		t.Errorf("partition %q's listing shows job plain of partition %q", "acme ", "acme")
	}
	op := b.act(t, "/jobs", url.Values{"action": {"delete"}, "scope": {"matching"}, "queue": {"q"}, "state": {"available"},
		"partition": {"acme "}})
	if op.Done != 1 || b.state(t, "spaced") != "deleted" || b.state(t, "plain") != headgate.StateAvailable {
		t.Errorf("delete partition %q: %+v; spaced %s, plain %s", "acme ", op, b.state(t, "spaced"), b.state(t, "plain"))
	}
}

// TestUnknownPage: a path that is no page of the dashboard answers 404 with the
// dashboard's error page naming it, under the mount prefix, not the router's bare text.
func TestUnknownPage(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "q"})
	b.h = http.StripPrefix("/admin", b.h)
	for _, path := range []string{"/admin/queues/q", "/admin/queues/q/available/more", "/admin/nope"} {
		res := b.get(t, path)
		want := "GET " + path + " is not a page or action of the dashboard"
		if res.status != http.StatusNotFound || !strings.Contains(res.body, want) || !strings.Contains(res.body, `href="/admin/"`) {
			t.Errorf("GET %s: %d %q, want 404 saying %q with a link to the overview", path, res.status, res.body, want)
		}
	}
}

// TestStateLinksKeepFilter: a listing's links to the queue's other states keep its
// filter and order, as its paging links do.
func TestStateLinksKeepFilter(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.enqueue(t, headgate.Envelope{ID: "a1", Queue: "q", PartitionKey: "acme"}, headgate.Envelope{ID: "a2", Queue: "q", PartitionKey: "acme"},
		headgate.Envelope{ID: "g1", Queue: "q", PartitionKey: "globex"}, headgate.Envelope{ID: "g2", Queue: "q", PartitionKey: "globex"})
	b.cancel(t, "a2", "g2")
	body := b.mustGet(t, "/queues/q/available?partition=acme&order=oldest", ">a1</a>")
	link := regexp.MustCompile(`<nav class="states">.*?<a href="([^"]*)">cancelled</a>`).FindStringSubmatch(body)
	if link == nil {
		t.Fatalf("no link to the cancelled listing:\n%s", body)
	}
	if want := "/queues/q/cancelled?order=oldest&amp;partition=acme"; link[1] != want {
		t.Errorf("link to the cancelled listing %q, want %q", link[1], want)
	}
	if cancelled := b.mustGet(t, html.UnescapeString(link[1]), ">a2</a>"); strings.Contains(cancelled, ">g2</a>") {
		t.Errorf("the cancelled listing of partition acme shows globex's job g2")
	}
}

// TestListingShortPageNote: the listing says a page may show fewer jobs than it read
// only when it may (two or more of partition, tag and fingerprint), not for a kind or
// a partition alone, which the job indexes answer in full pages.
func TestListingShortPageNote(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "q", Kind: "a", PartitionKey: "acme", Tags: []string{"vip"}})
	const note = "may show fewer jobs than it read"
	for query, want := range map[string]bool{"": false, "?kind=a": false, "?partition=acme": false, "?tag=vip": false,
		"?kind=a&partition=acme": false, "?partition=acme&tag=vip": true} {
		if body := b.mustGet(t, "/queues/q/available"+query, ">j</a>"); strings.Contains(body, note) != want {
			t.Errorf("listing%s says %q: %v, want %v", query, note, !want, want)
		}
	}
}

// TestMountedRedirectsKeepPrefix: a path the router would clean (the mount point
// without its slash, an empty, "." or ".." segment) is redirected under the prefix the
// dashboard is mounted under, its query kept, not to the site's root.
func TestMountedRedirectsKeepPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "q"})
	b.h = http.StripPrefix("/admin", b.h)
	for path, want := range map[string]string{
		"/admin":                                 "/admin/",
		"/admin//queues/q/available":             "/admin/queues/q/available",
		"/admin/queues/q/./available?kind=a%20b": "/admin/queues/q/available?kind=a%20b",
		"/admin/queues/x/../q/available/":        "/admin/queues/q/available/",
	} {
		res := b.get(t, path)
		if loc := res.header.Get("Location"); res.status != http.StatusTemporaryRedirect || loc != want {
			t.Errorf("GET %s: %d to %q, want 307 to %q", path, res.status, loc, want)
		}
	}
	b.mustGet(t, "/admin/queues/q/available", `href="/admin/jobs/j"`)
}

// TestChildrenOfWorkflowEndingInSpace: a workflow's children link lists its children,
// also when its id ends in a space, not those of the id without it.
func TestChildrenOfWorkflowEndingInSpace(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	for id, parent := range map[string]string{"p ": "", "p": "", "child-of-spaced": "p ", "child-of-plain": "p"} {
		events := []headgate.Event{{Seq: 1, Kind: headgate.EventWorkflowStarted, WorkflowType: "t", RunID: "r1", ParentWorkflowID: parent}}
		if parent != "" {
			events[0].ParentRunID = "r1"
		}
		if err := b.store.Append(b.ctx, id, events, 0); err != nil {
			t.Fatalf("Append(%s): %v", id, err)
		}
	}
	link := regexp.MustCompile(`<a href="([^"]*)">children</a>`).FindStringSubmatch(b.mustGet(t, "/workflows/p%20"))
	if link == nil {
		t.Fatal("no children link on workflow \"p \"'s page")
	}
	if body := b.mustGet(t, html.UnescapeString(link[1]), ">child-of-spaced</a>"); strings.Contains(body, ">child-of-plain</a>") {
		t.Errorf("the children of %q list %q, a child of %q", "p ", "child-of-plain", "p")
	}
}

// TestErrorPageOfIDEndingInJSON: a job whose id ends in .json that is not found gets the
// dashboard's error page, as any other id; the JSON endpoints keep their plain errors.
func TestErrorPageOfIDEndingInJSON(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	if res := b.get(t, "/jobs/report.json"); res.status != http.StatusNotFound || !strings.Contains(res.body, `id="error"`) {
		t.Errorf("missing job report.json: %d %q, want 404 with the error page", res.status, res.body)
	}
	if res := b.get(t, "/operations/none/progress.json"); res.status != http.StatusNotFound || strings.Contains(res.body, "<html") {
		t.Errorf("missing operation's progress.json: %d %q, want a plain 404", res.status, res.body)
	}
}
