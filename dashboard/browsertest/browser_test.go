package browsertest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/dashboard"
	"github.com/headgate/headgate/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// browser finds Chromium. Without it the test skips, unless HEADGATE_REQUIRE_BROWSER=1
// (as in CI) makes that a failure.
func browser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("HEADGATE_REQUIRE_BROWSER") == "1" {
		t.Fatal("HEADGATE_REQUIRE_BROWSER=1 but no chromium on PATH (Debian: apt-get install chromium)")
	}
	t.Skip("SKIPPED: no chromium on PATH, the dashboard is not tested in a browser (Debian: apt-get install chromium; CI sets HEADGATE_REQUIRE_BROWSER=1)")
	return ""
}

// consoleErrors collects what the page reports as an error or a warning: console
// calls, uncaught exceptions, and browser log entries such as Content-Security-Policy
// violations.
type consoleErrors struct {
	mu   sync.Mutex
	msgs []string
}

func (c *consoleErrors) follow(ctx context.Context) {
	for m, err := range chromedp.Console(ctx) {
		if err != nil {
			return
		}
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
			c.mu.Lock()
			c.msgs = append(c.msgs, fmt.Sprintf("%s at %s:%d", m, m.URL, m.Line))
			c.mu.Unlock()
		}
	}
}

func (c *consoleErrors) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

// session is a dashboard over seeded jobs and a headless Chromium tab on it.
type session struct {
	t    *testing.T
	url  string
	ctx  context.Context
	errs *consoleErrors
}

// newSession seeds a namespace (seed), serves its dashboard with actions allowed and
// opens a browser tab, all closed when the test ends.
func newSession(t *testing.T) *session {
	execPath := browser(t)
	rdb := redistest.Miniredis(t)
	ns := redistest.Namespace(t)
	ctx := context.Background()
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.FreezeClock(ctx, epoch); err != nil {
		t.Fatal(err)
	}
	seed(t, store)
	h, err := dashboard.New(rdb, &dashboard.Config{Namespace: ns, AllowActions: true, RateClasses: []string{"smtp"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(execPath), chromedp.NoSandbox,
		chromedp.WindowSize(1200, 760), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil { // starts the browser, for the whole test
		t.Fatalf("starting chromium: %v", err)
	}
	s := &session{t: t, url: srv.URL, errs: &consoleErrors{}}
	go s.errs.follow(bctx)
	tctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(cancelTimeout)
	s.ctx = tctx
	return s
}

// step runs actions, failing the test with what the console said if one fails.
func (s *session) step(name string, actions ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, actions...); err != nil {
		s.t.Fatalf("%s: %v (console: %q)", name, err, s.errs.all())
	}
}

func (s *session) read(name string, a chromedp.Action[string]) string {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, a)
	if err != nil {
		s.t.Fatalf("%s: %v (console: %q)", name, err, s.errs.all())
	}
	return v
}

// noConsoleErrors fails the test if the browser reported any error or warning.
func (s *session) noConsoleErrors() {
	s.t.Helper()
	if e := s.errs.all(); len(e) > 0 {
		s.t.Errorf("the browser reported errors:\n%s", strings.Join(e, "\n"))
	}
}

// shot saves a PNG of the page as name.png in $HEADGATE_SCREENSHOTS, when it is set.
func shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		dir := os.Getenv("HEADGATE_SCREENSHOTS")
		if dir == "" {
			return nil
		}
		png, err := chromedp.CaptureScreenshot()(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	})
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// TestBrowserRetryByFilter drives an operator's path: overview -> a queue's cancelled
// jobs -> filter by partition -> select everything matching -> retry -> confirm ->
// progress completes -> the job page shows the new state. Any console error fails it.
// With HEADGATE_SCREENSHOTS=DIR it saves a PNG of each main page in DIR.
func TestBrowserRetryByFilter(t *testing.T) {
	s := newSession(t)
	s.step("overview",
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible(css(`tr[data-queue="billing"]`)),
		// The live refresh has drawn the chart's first samples.
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[chromedp.Void](`document.getElementById("chart-hint").textContent.startsWith("2 sample")`)(ctx, tg)
			return err
		}),
		// No worker serves mail: the overview flags it, and the refresh keeps the flag.
		chromedp.WaitVisible(css(`tr[data-queue="mail"] [data-unserved]`)),
		chromedp.WaitNotVisible(css(`tr[data-queue="billing"] [data-unserved]`)), // nothing unfinished
		// The last hour's throughput, drawn on the server.
		chromedp.WaitVisible(css(`#throughput svg rect.done`)),
		shot("overview"),
		chromedp.Click(css(`tr[data-queue="billing"] a[data-state="cancelled"]`)),
		chromedp.WaitVisible(css(`#jobs`)),
	)
	s.step("filter by partition",
		chromedp.SetValue(css(`#filter input[name="partition"]`), "acme"),
		chromedp.Submit(css(`#filter input[name="partition"]`)),
		chromedp.WaitVisible(css(`input[name="partition"][value="acme"]`)),
	)
	if loc := s.read("location", chromedp.Location()); !strings.Contains(loc, "partition=acme") {
		t.Fatalf("after filtering the page is %s", loc)
	}
	rows, err := chromedp.Run(s.ctx, chromedp.Nodes(chromedp.CSSAll(`#jobs a.job-link`)))
	if err != nil {
		t.Fatalf("listing: %v", err)
	}
	if len(rows) == 0 {
		t.Fatal("the filtered listing shows no job")
	}
	for _, n := range rows {
		if !strings.HasPrefix(n.AttributeValue("href"), "/jobs/acme-") {
			t.Errorf("filtered listing shows %s", n.AttributeValue("href"))
		}
	}
	s.step("select", chromedp.Click(css(`#select-page`)), shot("jobs"),
		chromedp.Click(css(`#scope-matching`)), chromedp.Click(css(`#bulk-retry`)), chromedp.WaitVisible(css(`#confirm-count`)))
	if text := s.read("confirmation", chromedp.Text(css(`#confirm-count`))); !strings.Contains(text, "every cancelled job of queue billing with partition acme") {
		t.Errorf("confirmation says %q", text)
	}
	s.step("retry",
		chromedp.Click(css(`#confirm`)),
		chromedp.WaitVisible(css(`#op-progress`)),
		chromedp.WaitVisible(css(`#operation[data-finished="true"]`)),
		shot("operation"),
	)
	if text := s.read("operation", chromedp.Text(css(`#op-status`))); !strings.Contains(text, fmt.Sprintf("Finished: %d changed, 0 refused", acmeCancelled)) {
		t.Errorf("operation status %q, want %d changed", text, acmeCancelled)
	}
	bar := s.read("progress bar", chromedp.Evaluate[string](`(function(){var p=document.getElementById("op-progress");return p.value+"/"+p.max})()`))
	if bar != fmt.Sprintf("%d/%d", acmeCancelled, acmeCancelled) {
		t.Errorf("progress bar at %s", bar)
	}
	s.step("job detail", chromedp.Navigate(s.url+"/jobs/acme-003"), chromedp.WaitVisible(css(`#job-state`)),
		chromedp.WaitVisible(css(`#why`)), shot("job"))
	if text := s.read("job state", chromedp.Text(css(`#job-state`))); text != "available" {
		t.Errorf("retried job acme-003 is %q, want available", text)
	}
	s.step("another partition", chromedp.Navigate(s.url+"/jobs/globex-001"), chromedp.WaitVisible(css(`#job-state`)))
	if text := s.read("job state", chromedp.Text(css(`#job-state`))); text != "cancelled" {
		t.Errorf("globex-001 is %q, want still cancelled", text)
	}
	s.step("tenants", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(css(`tr[data-queue="mail"] a.tenants-link`)),
		chromedp.Click(css(`tr[data-queue="mail"] a.tenants-link`)), chromedp.WaitVisible(css(`#tenants tr[data-partition="tenant-0"]`)),
		shot("tenants"))
	s.step("workers, cron, quarantine, rates, policy, workflows",
		chromedp.Navigate(s.url+"/workers"), chromedp.WaitVisible(css(`#workers`)),
		chromedp.Navigate(s.url+"/cron"), chromedp.WaitVisible(css(`#cron`)),
		chromedp.Navigate(s.url+"/quarantine"), chromedp.WaitVisible(css(`#quarantine`)),
		chromedp.Navigate(s.url+"/rates"), chromedp.WaitVisible(css(`#rates`)),
		chromedp.Navigate(s.url+"/policy"), chromedp.WaitVisible(css(`#policy`)),
		chromedp.Navigate(s.url+"/workflows"), chromedp.WaitVisible(css(`#workflows`)),
		chromedp.Click(css(`a.workflow-link`)), chromedp.WaitVisible(css(`#timeline`)), shot("workflow"))
	if text := s.read("workflow status", chromedp.Text(css(`#workflow-status`))); text != "running" {
		t.Errorf("workflow status %q, want running", text)
	}
	s.noConsoleErrors()
}

// TestBrowserWithoutScripts reads and acts with JavaScript off: the pages are whole
// without it, and an operation's page reloads itself until the operation is done.
func TestBrowserWithoutScripts(t *testing.T) {
	s := newSession(t)
	s.step("scripts off", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
	s.step("overview", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(css(`tr[data-queue="mail"] a[data-state="available"]`)))
	if n := s.read("count", chromedp.Text(css(`tr[data-queue="mail"] a[data-state="available"]`))); n != "32" {
		t.Errorf("mail shows %s available, want 32", n)
	}
	s.step("select two",
		chromedp.Navigate(s.url+"/queues/billing/cancelled?partition=globex"),
		chromedp.Click(css(`input.select[value="globex-001"]`)),
		chromedp.Click(css(`input.select[value="globex-002"]`)),
		chromedp.Click(css(`#bulk-delete`)),
		chromedp.WaitVisible(css(`#confirm-count`)),
	)
	if text := s.read("confirmation", chromedp.Text(css(`#confirm-count`))); text != "delete 2 selected job(s): 2 job(s)." {
		t.Errorf("confirmation says %q", text)
	}
	s.step("delete", chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`#operation[data-finished="true"]`)))
	if text := s.read("operation", chromedp.Text(css(`#op-status`))); !strings.HasPrefix(text, "Finished: 2 changed, 0 refused") {
		t.Errorf("operation status %q", text)
	}
	s.step("listing again", chromedp.Navigate(s.url+"/queues/billing/cancelled?partition=globex"), chromedp.WaitVisible(css(`#jobs`)))
	if left := s.read("listed", chromedp.Text(css(`#jobs tbody`))); strings.Contains(left, "globex-001") || strings.Contains(left, "globex-002") || !strings.Contains(left, "globex-003") {
		t.Errorf("after deleting globex-001 and -002 the listing shows %q", left)
	}
	s.step("workflow", chromedp.Navigate(s.url+"/workflows/order-c-981"), chromedp.WaitVisible(css(`#timeline`)))
	s.noConsoleErrors()
}

const acmeCancelled = 24

// seed fills three queues: billing has acme and globex jobs, some cancelled, and a
// few of every other kind of state a listing shows.
func seed(t *testing.T, store *headgate.Store) {
	t.Helper()
	ctx := context.Background()
	// The jobs are enqueued five minutes before epoch, after 40 minutes of throughput.
	seedThroughput(t, store)
	var jobs []headgate.Envelope
	var cancel []string
	for i := range acmeCancelled {
		id := fmt.Sprintf("acme-%03d", i)
		jobs = append(jobs, headgate.Envelope{ID: id, Kind: "invoice.send", Queue: "billing", PartitionKey: "acme",
			Tags: []string{"eu"}, Payload: []byte{0x81, 0xa6, 'a', 'm', 'o', 'u', 'n', 't', 0x2a}})
		cancel = append(cancel, id)
	}
	for i := range 10 {
		id := fmt.Sprintf("globex-%03d", i)
		jobs = append(jobs, headgate.Envelope{ID: id, Kind: "invoice.send", Queue: "billing", PartitionKey: "globex"})
		cancel = append(cancel, id)
	}
	for i := range 40 {
		jobs = append(jobs, headgate.Envelope{ID: fmt.Sprintf("mail-%03d", i), Kind: "email.welcome", Queue: "mail",
			PartitionKey: fmt.Sprintf("tenant-%d", i%4), RateClass: "smtp"})
	}
	for i := range 5 {
		jobs = append(jobs, headgate.Envelope{ID: fmt.Sprintf("report-%03d", i), Kind: "report.build", Queue: "reports",
			ScheduledIn: time.Hour})
	}
	if _, err := store.Enqueue(ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	for _, id := range cancel {
		if err := store.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.SetRateLimit(ctx, "smtp", headgate.RateLimit{Limit: 100, Window: time.Minute, Burst: 50}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Admit(ctx, headgate.AdmitRequest{Worker: "w1", LeaseID: "w1-lease", Queues: []string{"mail"}, Capacity: 8, Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}
	history := []headgate.Event{
		{Kind: headgate.EventWorkflowStarted, WorkflowType: "checkout", RunID: "run-1", Input: []byte(`{"cart":"c-981","total":42.5}`)},
		{Kind: headgate.EventStepScheduled, Name: "reserve-stock", Attempt: 1},
		{Kind: headgate.EventStepCompleted, Name: "reserve-stock", Attempt: 1, Result: []byte(`{"reserved":3}`)},
		{Kind: headgate.EventStepScheduled, Name: "charge-card", Attempt: 1},
		{Kind: headgate.EventStepFailed, Name: "charge-card", Attempt: 1, Error: &headgate.WorkflowError{Message: "gateway timeout"}},
		{Kind: headgate.EventTimerStarted, TimerID: "retry-charge", FireAt: epoch.Add(30 * time.Second)},
	}
	for i := range history {
		history[i].Seq = int64(i + 1)
	}
	if err := store.Append(ctx, "order-c-981", history, 0); err != nil {
		t.Fatal(err)
	}
	if err := store.FreezeClock(ctx, epoch); err != nil {
		t.Fatal(err)
	}
}

// seedThroughput works through 40 minutes of a webhooks queue up to five minutes before
// epoch, a sample of its counters a minute (as the worker's series duty takes them), so
// the overview charts them; the store clock ends five minutes before epoch.
func seedThroughput(t *testing.T, store *headgate.Store) {
	t.Helper()
	ctx := context.Background()
	const minutes = 40
	if err := store.FreezeClock(ctx, epoch.Add(-(minutes+5)*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for m := range minutes {
		n := 6 + (m*7)%11
		var jobs []headgate.Envelope
		for i := range n {
			jobs = append(jobs, headgate.Envelope{ID: fmt.Sprintf("hook-%02d-%02d", m, i), Kind: "webhook.deliver", Queue: "webhooks",
				PartitionKey: fmt.Sprintf("tenant-%d", i%3)})
		}
		if _, err := store.Enqueue(ctx, jobs...); err != nil {
			t.Fatal(err)
		}
		claims, err := store.Admit(ctx, headgate.AdmitRequest{Worker: "w2", LeaseID: fmt.Sprintf("hooks-%d", m), Queues: []string{"webhooks"},
			Capacity: n, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var acks []headgate.AckRequest
		for i, c := range claims {
			o := headgate.OutcomeSuccess
			if (m+i)%9 == 0 {
				o = headgate.OutcomeSkip
				if m%4 == 1 {
					o = headgate.OutcomeUndecodable // a failed attempt
				}
			}
			acks = append(acks, headgate.AckRequest{Lease: c.LeaseRef(), Outcome: o})
		}
		if _, err := store.AckMany(ctx, acks); err != nil {
			t.Fatal(err)
		}
		if _, err := store.RecordSeries(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if err := store.AdvanceClock(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}
