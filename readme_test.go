package headgate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// TestReadmeSnippetIsTheExample keeps the README's first Go snippet compiling as written:
// it must be the code of Example_readme (example_readme_test.go), which the test build
// compiles, with main renamed. Imports, declarations and the body of main are compared as
// source text.
func TestReadmeSnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no Go snippet")
	}
	snippet := m[1]
	example, err := os.ReadFile("example_readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	a := parseSource(t, "README.md snippet", snippet)
	b := parseSource(t, "example_readme_test.go", example)
	if a.file.Name.Name != "main" {
		t.Errorf("the README snippet is package %s, want a program (package main)", a.file.Name.Name)
	}
	if ia, ib := a.imports(), b.imports(); !slices.Equal(ia, ib) {
		t.Errorf("imports differ:\n README:  %q\n example: %q", ia, ib)
	}
	da, db := a.decls("main"), b.decls("Example_readme")
	if len(da) != len(db) {
		t.Fatalf("the README snippet declares %d things, the example %d", len(da), len(db))
	}
	for i := range da {
		if da[i] != db[i] {
			t.Errorf("declaration %d differs:\nREADME:\n%s\nexample:\n%s", i, da[i], db[i])
		}
	}
}

type parsedSource struct {
	src  []byte
	fset *token.FileSet
	file *ast.File
}

func parseSource(t *testing.T, name string, src []byte) parsedSource {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		t.Fatalf("%s does not parse: %v", name, err)
	}
	return parsedSource{src: src, fset: fset, file: f}
}

func (p parsedSource) text(from, to token.Pos) string {
	return string(p.src[p.fset.Position(from).Offset:p.fset.Position(to).Offset])
}

func (p parsedSource) imports() []string {
	var out []string
	for _, im := range p.file.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		out = append(out, path)
	}
	return out
}

// decls returns the source of each top-level declaration but the imports; of the
// function named entry, only its body.
func (p parsedSource) decls(entry string) []string {
	var out []string
	for _, d := range p.file.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			continue
		}
		if f, ok := d.(*ast.FuncDecl); ok && f.Recv == nil && f.Name.Name == entry {
			out = append(out, p.text(f.Body.Pos(), f.Body.End()))
			continue
		}
		out = append(out, p.text(d.Pos(), d.End()))
	}
	return out
}
