package dashboard

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/humandur"
)

// page is what the layout template renders around a page's own data.
type page struct {
	Title        string
	Base         string
	Namespace    string
	AllowActions bool
	Data         any
}

// parsePages parses each page template with the layout around it.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(templateFuncs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render writes the page name with data, buffered so a template error is a clean 500.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	var buf bytes.Buffer
	p := page{Title: title, Base: baseOf(r), Namespace: h.cfg.Namespace, AllowActions: h.cfg.AllowActions,
		Data: data}
	if err := h.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		h.log.Error("dashboard template failed", "page", name, "err", err)
		http.Error(w, "template failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes()) // a client gone mid-answer is not our error
}

var templateFuncs = template.FuncMap{
	"queueURL": func(base, queue string, state headgate.State) string {
		return base + "/queues/" + url.PathEscape(queue) + "/" + url.PathEscape(string(state))
	},
	// queuePath is a queue's path, for its tenants page and its pause and resume.
	"queuePath":   func(base, queue string) string { return base + "/queues/" + url.PathEscape(queue) },
	"jobURL":      func(base, id string) string { return base + "/jobs/" + escapeID(id) },
	"workflowURL": func(base, id string) string { return base + "/workflows/" + escapeID(id) },
	"time":        formatTime,
	"duration":    formatDuration,
	"states":      func() []headgate.State { return headgate.States },
	"terminal":    func(s headgate.State) bool { return s.Terminal() },
}

// escapeID escapes a job id for a path, keeping '/' so {id...} reads it back whole. An
// id the path cannot carry (an empty, "." or ".." segment, which the router cleans away
// and redirects to another id's page) goes in the query instead: "?id=..." after the
// route's slash, which idOf reads.
func escapeID(id string) string {
	if p := "/" + id; path.Clean(p) != p && path.Clean(p)+"/" != p || id == "" {
		return "?id=" + url.QueryEscape(id)
	}
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// idOf is the id of a job's or workflow's page: its path's, else its query's (escapeID).
func idOf(r *http.Request) string {
	if id := r.PathValue("id"); id != "" {
		return id
	}
	return r.URL.Query().Get("id")
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return humandur.String(d)
}

// fieldRow is one named value of a struct, rendered for a table.
type fieldRow struct{ Name, Value string }

// fieldRows lists every exported field of the struct v (embedded structs flattened) but
// those in skip, so a page shows each field the store returns, new ones included.
func fieldRows(v any, skip ...string) []fieldRow {
	var rows []fieldRow
	var walk func(rv reflect.Value)
	walk = func(rv reflect.Value) {
		for rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				return
			}
			rv = rv.Elem()
		}
		rt := rv.Type()
		for i := range rt.NumField() {
			f := rt.Field(i)
			switch {
			case !f.IsExported() || slices.Contains(skip, f.Name):
			case f.Anonymous && f.Type.Kind() == reflect.Struct:
				walk(rv.Field(i))
			default:
				rows = append(rows, fieldRow{Name: f.Name, Value: formatValue(rv.Field(i).Interface())})
			}
		}
	}
	walk(reflect.ValueOf(v))
	return rows
}

func formatValue(v any) string {
	switch x := v.(type) {
	case time.Time:
		return formatTime(x)
	case time.Duration:
		return formatDuration(x)
	case []byte:
		return fmt.Sprintf("%d bytes", len(x))
	case []string:
		if len(x) == 0 {
			return "—"
		}
		return strings.Join(x, ", ")
	case string:
		if x == "" {
			return "—"
		}
		return x
	case fmt.Stringer:
		return x.String()
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Len() == 0 {
			return "—"
		}
		keys := rv.MapKeys()
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%v=%v", k.Interface(), rv.MapIndex(k).Interface())
		}
		slices.Sort(parts)
		return strings.Join(parts, ", ")
	case reflect.Struct:
		var parts []string
		for _, r := range fieldRows(v) {
			if r.Value != "—" {
				parts = append(parts, r.Name+": "+r.Value)
			}
		}
		if len(parts) == 0 {
			return "—"
		}
		return strings.Join(parts, "; ")
	case reflect.Pointer:
		if rv.IsNil() {
			return "—"
		}
		return formatValue(rv.Elem().Interface())
	}
	return fmt.Sprint(v)
}
