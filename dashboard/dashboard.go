package dashboard

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Action names what a request asks to do, for Config.Authorize and the action log.
type Action string

// Actions. ActionView is every read (every page and its live data); the others are the
// writes, each a POST.
const (
	ActionView              Action = "view"
	ActionRetry             Action = "retry"
	ActionDelete            Action = "delete"
	ActionCancel            Action = "cancel"
	ActionPause             Action = "pause"
	ActionResume            Action = "resume"
	ActionReleaseQuarantine Action = "release-quarantine"
	// ActionReleaseAndRetry lifts a quarantine and retries the job that crashed into it.
	ActionReleaseAndRetry Action = "release-quarantine-and-retry"
	ActionPauseSchedule   Action = "pause-schedule"
	ActionResumeSchedule  Action = "resume-schedule"
	// ActionRunSchedule enqueues a schedule's job now, out of turn.
	ActionRunSchedule Action = "run-schedule"
)

// RequestTimeoutDefault bounds the Redis reads of one page.
const RequestTimeoutDefault = 10 * time.Second

// Config configures a Handler.
type Config struct {
	// Namespace is the store namespace the dashboard shows. Required.
	Namespace string

	// AllowActions lets the dashboard change the namespace (retry, delete, cancel, pause,
	// resume, release a quarantine, pause, resume or run a schedule). Without it the dashboard is read-only: it shows no
	// action and refuses every POST with 403. Defaults to false.
	AllowActions bool

	// Authorize decides each request: it returns who is asking (for the action log) or
	// an error, which refuses the request with 403 and the error's text. It is called
	// with ActionView for every read and with the action for every write. Without it,
	// reads are open and writes are accepted only from loopback clients: a dashboard
	// reachable from other hosts that allows actions must say who may act. (Behind a
	// reverse proxy on the same host every client looks local: set Authorize there.)
	// Defaults to nil.
	Authorize func(r *http.Request, action Action) (user string, err error)

	// Redact rewrites a decoded payload before a page shows it, e.g. to hide card
	// numbers: it gets the job's kind (for a workflow's inputs, results and event
	// payloads, the workflow's type) and the payload, decoded from msgpack or JSON, as
	// JSON-like values (maps, slices, strings, numbers, bools, nil), and returns what to
	// show. With it set, a payload that decodes as neither is not shown. Defaults to nil:
	// payloads are shown whole.
	Redact func(kind string, payload any) any

	// RateClasses are the rate classes whose buckets the rate page shows (the store keeps
	// no list of them). Defaults to none.
	RateClasses []string

	// RequestTimeout bounds the Redis calls of one request. Defaults to
	// RequestTimeoutDefault.
	RequestTimeout time.Duration

	// Logger receives one INFO line per action with who asked, what, on what and how
	// many jobs it changed. Defaults to slog.Default().
	Logger *slog.Logger
}

// Handler serves the dashboard of one namespace. Mount it under any path prefix with
// http.StripPrefix: its links follow the prefix the request came in under.
type Handler struct {
	cfg    Config
	src    sources
	log    *slog.Logger
	pages  map[string]*template.Template
	mux    *http.ServeMux
	guard  *http.CrossOriginProtection
	ops    *operations
	static http.Handler
}

var _ http.Handler = (*Handler)(nil)

// New returns the dashboard of cfg.Namespace on rdb.
func New(rdb redis.UniversalClient, cfg *Config) (*Handler, error) {
	if rdb == nil {
		return nil, &headgate.InvalidError{Field: "rdb", Reason: "is nil"}
	}
	if cfg == nil {
		cfg = &Config{}
	}
	c := *cfg
	if c.RequestTimeout < 0 {
		return nil, &headgate.InvalidError{Field: "RequestTimeout", Reason: fmt.Sprintf("is %s, less than zero", c.RequestTimeout)}
	}
	for _, class := range c.RateClasses {
		if err := headgate.ValidateName("RateClasses", class); err != nil {
			return nil, err
		}
	}
	c.RequestTimeout = cmp.Or(c.RequestTimeout, RequestTimeoutDefault)
	log := cmp.Or(c.Logger, slog.Default())
	insp, err := inspector.New(rdb, &inspector.Config{Namespace: c.Namespace, Logger: log})
	if err != nil {
		return nil, err
	}
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: c.Namespace})
	if err != nil {
		return nil, err
	}
	return newHandler(c, inspectorSources(insp, store), log)
}

func newHandler(cfg Config, src sources, log *slog.Logger) (*Handler, error) {
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	h := &Handler{
		cfg:    cfg,
		src:    src,
		log:    log.With("namespace", cfg.Namespace),
		pages:  pages,
		mux:    http.NewServeMux(),
		guard:  http.NewCrossOriginProtection(),
		ops:    newOperations(),
		static: http.StripPrefix("/static/", http.FileServerFS(static)),
	}
	h.routes()
	return h, nil
}

// ServeHTTP serves one request: security headers on every answer, the cross-origin check
// on every POST, then the page or action.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", contentSecurityPolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		hdr.Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := h.guard.Check(r); err != nil {
		h.refuse(w, r, http.StatusForbidden, "cross-origin request refused: actions are accepted only from the dashboard's own pages")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.RequestTimeout)
	defer cancel()
	r = r.WithContext(withBase(ctx, r))
	if clean := cleanPath(r.URL.Path); clean != r.URL.Path {
		// The router would redirect to the clean path without the prefix the dashboard
		// is mounted under (/admin into /, /admin/queues/./q into /queues/q): redirect
		// under it.
		u := url.URL{Path: clean, RawQuery: r.URL.RawQuery}
		http.Redirect(w, r, baseOf(r)+u.String(), http.StatusTemporaryRedirect)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// cleanPath is p as the router serves it: rooted, without empty, "." or ".." segments,
// its trailing slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// contentSecurityPolicy allows only the dashboard's own script, style and requests: no
// inline script or style, no framing, forms posting only back to the dashboard.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func (h *Handler) routes() {
	m := h.mux
	m.Handle("GET /static/", h.static)
	m.HandleFunc("GET /{$}", h.view(h.overview))
	m.HandleFunc("GET /overview.json", h.view(h.overviewJSON))
	m.HandleFunc("GET /queues/{queue}/{state}", h.view(h.jobs))
	m.HandleFunc("GET /queues/{queue}/tenants", h.view(h.tenants))
	m.HandleFunc("GET /jobs/{id...}", h.view(h.job))
	m.HandleFunc("GET /workers", h.view(h.workers))
	m.HandleFunc("GET /cron", h.view(h.cron))
	m.HandleFunc("GET /quarantine", h.view(h.quarantine))
	m.HandleFunc("GET /rates", h.view(h.rates))
	m.HandleFunc("GET /policy", h.view(h.policy))
	m.HandleFunc("GET /workflows", h.view(h.workflows))
	m.HandleFunc("GET /workflows/{id...}", h.view(h.workflow))
	m.HandleFunc("GET /operations/{op}", h.view(h.operation))
	m.HandleFunc("GET /operations/{op}/progress.json", h.view(h.operationJSON))

	// Any other path is the dashboard's own not-found page, which names it, rather than
	// the router's bare "404 page not found".
	m.HandleFunc("/", h.view(func(w http.ResponseWriter, r *http.Request) error {
		return fmt.Errorf("%s %s is not a page or action of the dashboard: %w", r.Method, baseOf(r)+r.URL.Path, errNotFound)
	}))

	m.HandleFunc("POST /jobs", h.jobAction)
	m.HandleFunc("POST /queues/{queue}/pause", h.queueAction(ActionPause))
	m.HandleFunc("POST /queues/{queue}/resume", h.queueAction(ActionResume))
	m.HandleFunc("POST /quarantine/release", h.quarantineAction)
	m.HandleFunc("POST /cron/pause", h.scheduleAction(ActionPauseSchedule))
	m.HandleFunc("POST /cron/resume", h.scheduleAction(ActionResumeSchedule))
	m.HandleFunc("POST /cron/run", h.scheduleAction(ActionRunSchedule))
}

// errForbidden wraps an authorization refusal.
var errForbidden = errors.New("forbidden")

// authorize decides whether r may do action and returns who asks ("" when unknown).
func (h *Handler) authorize(r *http.Request, action Action) (string, error) {
	if action != ActionView {
		if !h.cfg.AllowActions {
			return "", fmt.Errorf("%w: the dashboard is read-only (start it with actions allowed to %s)", errForbidden, action)
		}
		if h.cfg.Authorize == nil && !loopback(r) {
			return "", fmt.Errorf("%w: actions from other hosts need an authorization hook (Config.Authorize)", errForbidden)
		}
	}
	if h.cfg.Authorize == nil {
		return "", nil
	}
	user, err := h.cfg.Authorize(r, action)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", errForbidden, action, err)
	}
	return user, nil
}

// loopback tells whether the client is on this host.
func loopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// view wraps a read: authorized as ActionView, its error rendered as a page.
func (h *Handler) view(fn func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := h.authorize(r, ActionView); err != nil {
			h.refuse(w, r, http.StatusForbidden, err.Error())
			return
		}
		if err := fn(w, r); err != nil {
			h.fail(w, r, err)
		}
	}
}

// fail renders err: 404 for a missing job or page, 400 for bad input, 500 otherwise.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var invalid *headgate.InvalidError
	switch {
	case errors.Is(err, headgate.ErrJobNotFound), errors.Is(err, headgate.ErrWorkflowNotFound), errors.Is(err, errNotFound):
		h.refuse(w, r, http.StatusNotFound, err.Error())
	case errors.As(err, &invalid):
		h.refuse(w, r, http.StatusBadRequest, err.Error())
	default:
		h.log.Error("dashboard page failed", "path", r.URL.Path, "err", err)
		h.refuse(w, r, http.StatusInternalServerError, err.Error())
	}
}

var errNotFound = errors.New("not found")

// refuse answers with status and an error page (plain text for JSON endpoints: the
// routes whose pattern ends in .json, not a job or workflow page whose id does).
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if strings.HasSuffix(r.Pattern, ".json") {
		http.Error(w, msg, status)
		return
	}
	w.WriteHeader(status)
	h.render(w, r, "error", "Error", map[string]any{"Status": status, "StatusText": http.StatusText(status), "Message": msg})
}

type baseKey struct{}

// withBase records the path prefix the dashboard is mounted under: what http.StripPrefix
// took off the request's path.
func withBase(ctx context.Context, r *http.Request) context.Context {
	base := ""
	if full := r.URL.EscapedPath(); r.RequestURI != "" {
		reqPath, _, _ := strings.Cut(r.RequestURI, "?")
		base = strings.TrimSuffix(reqPath, full)
		base = strings.TrimSuffix(base, "/")
	}
	return context.WithValue(ctx, baseKey{}, base)
}

func baseOf(r *http.Request) string {
	b, _ := r.Context().Value(baseKey{}).(string)
	return b
}
