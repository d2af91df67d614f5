package headgate

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFilesNamedAfterTransitions holds the layout to its rule: a transition's script, the
// Go that runs it and its conformance cases share the transition's name (lua/ack.lua,
// ack.go, rqueuetest/conformance_ack.go), so that any of the three is found from the
// other two. lib.lua is the one script without a transition: it holds the helpers the
// others include.
func TestFilesNamedAfterTransitions(t *testing.T) {
	scripts := scriptSources(t)
	delete(scripts, "lib")
	loaded := map[string]string{} // script name: the variable that loads it
	roots, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	loads := regexp.MustCompile(`(script\w+)\s*=\s*loadScript\("(\w+)"\)`)
	for _, f := range roots {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range loads.FindAllStringSubmatch(string(src), -1) {
			loaded[m[2]] = m[1]
		}
	}
	hasCase := regexp.MustCompile(`(?m)^var \w+Cases = \[\]conformanceCase\{\n\t(//.*\n\t)*\{"`)
	for name := range scripts {
		src, err := os.ReadFile(name + ".go")
		switch {
		case err != nil:
			t.Errorf("lua/%s.lua has no %s.go: the Go method that runs it belongs there", name, name)
		case loaded[name] == "":
			t.Errorf("lua/%s.lua is loaded by no loadScript call", name)
		case !regexp.MustCompile(`\b` + loaded[name] + `\b`).Match(src):
			t.Errorf("%s.go does not run lua/%s.lua (%s)", name, name, loaded[name])
		}
		conf, err := os.ReadFile(filepath.Join("rqueuetest", "conformance_"+name+".go"))
		switch {
		case err != nil:
			t.Errorf("lua/%s.lua has no rqueuetest/conformance_%s.go: its conformance cases belong there", name, name)
		case !hasCase.Match(conf):
			t.Errorf("rqueuetest/conformance_%s.go holds no conformance case", name)
		}
	}

	// The other way round: each conformance file is named after a script, or after the
	// root Go file of the reads it covers (conformance_wf_history.go: wf_history.go), or
	// after either and a topic (conformance_ack_history.go, conformance_clock_corrupt.go);
	// or it is one of these.
	crossCutting := map[string]bool{
		"conformance_wf.go":         true, // ExerciseWorkflowStore and the workflow cases' helpers
		"conformance_validation.go": true, // refusals Go decides, for calls of many transitions
	}
	confs, err := filepath.Glob(filepath.Join("rqueuetest", "conformance_*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range confs {
		file := filepath.Base(path)
		if strings.HasSuffix(file, "_test.go") || crossCutting[file] {
			continue
		}
		if owner(strings.TrimSuffix(strings.TrimPrefix(file, "conformance_"), ".go"), scripts) == "" {
			t.Errorf("rqueuetest/%s is named after no script and no root Go file: name it after the transition it covers", file)
		}
	}

	// Every case list runs: Exercise and ExerciseWorkflowStore name each one.
	var suites strings.Builder
	for _, f := range []string{"conformance.go", "conformance_wf.go"} {
		src, err := os.ReadFile(filepath.Join("rqueuetest", f))
		if err != nil {
			t.Fatal(err)
		}
		suites.Write(src)
	}
	lists := regexp.MustCompile(`(?m)^var (\w+Cases) = \[\]conformanceCase\{`)
	for _, path := range confs {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range lists.FindAllStringSubmatch(string(src), -1) {
			if !regexp.MustCompile(`\b` + m[1] + `\b`).MatchString(suites.String()) {
				t.Errorf("rqueuetest/%s: %s is run by no suite (add it to Exercise's or ExerciseWorkflowStore's lists)",
					filepath.Base(path), m[1])
			}
		}
	}
}

// owner returns what a conformance file named base covers: the longest prefix of base,
// cut at an underscore, that names a script or a root Go file; "" when none does.
func owner(base string, scripts map[string]string) string {
	for name := base; ; {
		if _, ok := scripts[name]; ok {
			return name
		}
		if _, err := os.Stat(name + ".go"); err == nil {
			return name
		}
		i := strings.LastIndex(name, "_")
		if i < 0 {
			return ""
		}
		name = name[:i]
	}
}
