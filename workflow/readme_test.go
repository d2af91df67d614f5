package workflow_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSnippetIsTheExample keeps the README's workflow snippets compiling: each
// must be a part of its example, line for line, one tab of indent less.
func TestReadmeSnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ heading, example string }{
		{"## Durable workflows", "example_test.go"},
		{"### Versioning workflows", "example_version_test.go"},
	} {
		m := regexp.MustCompile("(?s)" + c.heading + "\n.*?```go\n(.*?)```").FindSubmatch(readme)
		if m == nil {
			t.Errorf("README.md has no Go snippet under %q", c.heading)
			continue
		}
		example, err := os.ReadFile(c.example)
		if err != nil {
			t.Fatal(err)
		}
		var indented []string
		for line := range strings.Lines(string(m[1])) {
			if strings.TrimSpace(line) == "" {
				indented = append(indented, "\n")
				continue
			}
			indented = append(indented, "\t"+line)
		}
		if !strings.Contains(string(example), strings.Join(indented, "")) {
			t.Errorf("the README's snippet under %q is not a part of %s:\n%s", c.heading, c.example, m[1])
		}
	}
}
