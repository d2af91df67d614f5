package workflow_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSnippetIsTheExample keeps the README's workflow snippet compiling: it must
// be a part of Example (example_test.go), line for line, one tab of indent less.
func TestReadmeSnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Durable workflows\n.*?```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no Go snippet under \"## Durable workflows\"")
	}
	example, err := os.ReadFile("example_test.go")
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
		t.Errorf("the README's workflow snippet is not a part of Example:\n%s", m[1])
	}
}
