package main

import (
	"bytes"
	"flag"
	"io"
	"iter"
	"os"
	"regexp"
	"strings"
	"testing"
)

// commandFlags yields each command that takes flags with the flag set it registers.
func commandFlags() iter.Seq2[*command, *flag.FlagSet] {
	return func(yield func(*command, *flag.FlagSet) bool) {
		for _, cmd := range commands {
			if cmd.flags == nil {
				continue
			}
			c := &cli{}
			fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cmd.flags(fs, c)
			cronFlagSets.Delete(c)
			dashboardFlags.Delete(c)
			policyJSON.Delete(c)
			if !yield(cmd, fs) {
				return
			}
		}
	}
}

// TestUsageNamesEveryFlag: the synopsis help prints for a command names every flag the
// command registers, so that a flag added to a verb cannot go missing from its usage.
func TestUsageNamesEveryFlag(t *testing.T) {
	t.Parallel()
	global := newTestFlagSet(&cli{})
	for cmd, fs := range commandFlags() {
		fs.VisitAll(func(f *flag.Flag) {
			if global.Lookup(f.Name) != nil {
				return
			}
			if !regexp.MustCompile(`(^|[\s\[(|])-` + regexp.QuoteMeta(f.Name) + `([\s\])|]|$)`).MatchString(cmd.args) {
				t.Errorf("headgate %s registers -%s, which its synopsis %q does not name", cmd.name, f.Name, cmd.args)
			}
		})
	}
}

// TestPackageDocIsUsage: the package doc lists the commands as help prints them, synopsis
// and summary, so the two cannot drift apart.
func TestPackageDocIsUsage(t *testing.T) {
	t.Parallel()
	var help bytes.Buffer
	c := &cli{stderr: &help}
	c.usage(newTestFlagSet(c))
	_, after, ok := strings.Cut(help.String(), "\ncommands:\n")
	listed, _, ok2 := strings.Cut(after, "\nglobal flags:")
	if !ok || !ok2 {
		t.Fatalf("help has no commands section:\n%s", help.String())
	}
	var want strings.Builder
	for line := range strings.Lines(listed) {
		want.WriteString("//\t" + strings.TrimPrefix(line, "  "))
	}

	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, doc, ok := strings.Cut(string(src), "// Commands:\n//\n")
	doc, _, ok2 = strings.Cut(doc, "//\n// -redis")
	if !ok || !ok2 {
		t.Fatal("main.go's package doc has no Commands section ending before the -redis paragraph")
	}
	if doc != want.String() {
		t.Errorf("main.go's package doc lists the commands as\n%s\nwant, as headgate help prints them:\n%s", doc, want.String())
	}
}
