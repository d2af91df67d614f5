package headgate

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// A Redis Function makes lib.lua's constants once, at FUNCTION LOAD, and every call of
// the library shares them (functions.go). That is what an EVAL does only while no
// script changes one: this test reads every script and every lib.lua definition and
// fails on any use of a constant that could change it or let it escape to code that
// could. Allowed: reading a field, its length, unpack/ipairs/pairs/next over it, a
// truth test, and passing it to a function whose parameter is itself used only so.
func TestLuaConstantsNeverWritten(t *testing.T) {
	var files []luaCode
	for name, body := range scriptSources(t) {
		if name != "lib" {
			files = append(files, luaCode{where: "lua/" + name + ".lua", code: stripLua(body)})
		}
	}
	for _, d := range lib.defs {
		files = append(files, luaCode{where: "lua/lib.lua " + d.names[0], code: stripLua(d.code), def: d})
	}
	holdsFunctions := map[string]bool{}
	for _, d := range lib.defs {
		for _, n := range d.names {
			if table, _, ok := strings.Cut(n, "."); ok {
				holdsFunctions[table] = true
			}
		}
	}
	constants := 0
	for _, d := range lib.defs {
		if !d.constant() || holdsFunctions[d.names[0]] {
			continue
		}
		for _, n := range d.names {
			constants++
			check := newConstantCheck(files)
			for _, f := range files {
				if err := check.check(f, n, isTable(d.code), isNestedTable(d.code)); err != nil {
					t.Error(err)
				}
			}
		}
	}
	if constants < 20 {
		t.Fatalf("found %d constants in lua/lib.lua: the check reads the wrong definitions", constants)
	}
}

// The check itself: each snippet's use of a constant C is refused or allowed as stated.
func TestLuaConstantCheckRefusesWrites(t *testing.T) {
	lib := []luaCode{
		{where: "reader", code: "local function reader(P, fields)\n  return rcall('HMGET', P, unpack(fields))\nend\n"},
		{where: "writer", code: "local function writer(P, fields)\n  fields[#fields + 1] = 'x'\nend\n"},
		{where: "passer", code: "local function passer(P, f)\n  return writer(P, f)\nend\n"},
	}
	for _, c := range []struct {
		code    string
		nested  bool
		refused bool
	}{
		{"local x = C[1]\nfor _, f in ipairs(C) do end\nlocal n = #C\nrcall('HMGET', k, unpack(C))", false, false},
		{"if C[f] then end\nif not C[j.state] then end\nlocal d = C.maxa or 0", false, false},
		{"reader(P, C)\nreader(P, fields or C)", false, false},
		{"local r = C[f]\nif not r or n < r[1] then end", true, false},
		{"C[1] = 'x'", false, true},
		{"C.maxa = 3", false, true},
		{"C[f], x = 1, 2", false, true},
		{"C = {}", false, true},
		{"a, C = 1, 2", false, true},
		{"table.insert(C, 'x')", false, true},
		{"local t = C\nt[1] = 2", false, true},
		{"return C", false, true},
		{"writer(P, C)", false, true},
		{"passer(P, C)", false, true},
		{"unknown(P, C)", false, true},
		{"local r = C[f]\nr[1] = 0", true, true},
		{"keep(C[f])", true, true},
		{"for _, r in pairs(C) do end", true, true},
	} {
		files := append([]luaCode{{where: "script", code: c.code}}, lib...)
		err := newConstantCheck(files).check(files[0], "C", true, c.nested)
		if (err != nil) != c.refused {
			t.Errorf("%q: check = %v, want refused %v", c.code, err, c.refused)
		}
	}
}

type luaCode struct {
	where string
	code  string // stripped by stripLua
	def   libDef // lib.lua's definition, when code is one
}

type constantCheck struct {
	funcs   map[string]luaCode // a function's name -> the code defining it, its body from there on
	visited map[string]bool    // function and parameter checked
}

var luaFunctionDef = regexp.MustCompile(`(?m)local function ([A-Za-z_]\w*)\(`)

func newConstantCheck(files []luaCode) *constantCheck {
	c := &constantCheck{funcs: map[string]luaCode{}, visited: map[string]bool{}}
	for _, f := range files {
		for _, m := range luaFunctionDef.FindAllStringSubmatchIndex(f.code, -1) {
			c.funcs[f.code[m[2]:m[3]]] = luaCode{where: f.where, code: f.code[m[0]:]}
		}
	}
	return c
}

// isTable reports whether a constant's definition makes a table.
func isTable(def string) bool {
	_, value, _ := strings.Cut(def, "=")
	return strings.HasPrefix(strings.TrimSpace(value), "{")
}

// isNestedTable reports whether a constant's definition holds tables in its table.
func isNestedTable(def string) bool {
	_, rest, ok := strings.Cut(def, "{")
	return ok && strings.Contains(rest, "{")
}

var (
	luaAssignAfter = regexp.MustCompile(`^\s*(?:,\s*[\w.]+(?:\[[^\]]*\])?\s*)*=($|[^=])`)
	luaLocalBefore = regexp.MustCompile(`local\s+(?:[A-Za-z_]\w*\s*,\s*)*$`)
	luaReadCall    = regexp.MustCompile(`(?:^|[^\w.])(?:unpack|ipairs|pairs|next)\(\s*$`)
	luaTruthAfter  = regexp.MustCompile(`^\s*(?:then|and|==|~=|do)\b|^\s*(?:==|~=)`)
	luaAliasBefore = regexp.MustCompile(`local\s+([A-Za-z_]\w*)\s*=\s*$`)
	luaNotBefore   = regexp.MustCompile(`(?:^|[^\w])not\s*$`)
	luaOrOperands  = regexp.MustCompile(`^(?:[\w.]+\s+or\s+)*$`)
	luaCallee      = regexp.MustCompile(`([A-Za-z_][\w.:]*)\s*$`)
	luaWord        = regexp.MustCompile(`[A-Za-z_]\w*`)
	luaField       = regexp.MustCompile(`^\.[A-Za-z_]\w*`)
)

// check returns the first use of name in f that could change the table or value it
// names. A value that is not a table (table false) can only be assigned to; a nested
// table's fields are tables, checked as the table is.
func (c *constantCheck) check(f luaCode, name string, table, nested bool) error {
	code := f.code
	for _, loc := range luaWord.FindAllStringIndex(code, -1) {
		if code[loc[0]:loc[1]] != name {
			continue
		}
		before, after := code[:loc[0]], code[loc[1]:]
		if loc[0] > 0 && (code[loc[0]-1] == '.' || code[loc[0]-1] == ':') {
			continue // a field of another table
		}
		line := lineOf(code, loc[0])
		fail := func(why string) error {
			return fmt.Errorf("%s: %s %s: %q", f.where, name, why, line)
		}
		if luaLocalBefore.MatchString(before) {
			// The definition, or a local of the same name: what follows is checked as if
			// it were the constant, more strictly than needed.
			continue
		}
		if !table {
			if luaAssignAfter.MatchString(after) {
				return fail("is assigned to")
			}
			continue
		}
		// An index chain: name[k].f ...
		rest, depth := after, 0
		for {
			trimmed := strings.TrimLeft(rest, " \t")
			if strings.HasPrefix(trimmed, "[") {
				end := matching(trimmed, '[', ']')
				if end < 0 {
					return fail("has an unclosed index")
				}
				rest, depth = trimmed[end+1:], depth+1
				continue
			}
			if m := luaField.FindString(trimmed); m != "" {
				rest, depth = trimmed[len(m):], depth+1
				continue
			}
			break
		}
		if luaAssignAfter.MatchString(rest) {
			return fail("is assigned to")
		}
		if depth > 0 {
			if strings.HasPrefix(strings.TrimLeft(rest, " \t"), "(") || strings.HasPrefix(strings.TrimLeft(rest, " \t"), ":") {
				return fail("has a field called")
			}
			if !nested || depth > 1 {
				continue // a field's value read
			}
			// A field of a nested table is a table: an alias checked as the constant is.
			if m := luaAliasBefore.FindStringSubmatch(before); m != nil {
				if err := c.check(luaCode{where: f.where, code: code[loc[0]:]}, m[1], true, false); err != nil {
					return err
				}
				continue
			}
			if luaTruthAfter.MatchString(rest) {
				continue
			}
			return fail("has a table field that escapes")
		}
		switch {
		case strings.HasSuffix(strings.TrimRight(before, " \t"), "#"):
			continue
		case luaReadCall.MatchString(before):
			if nested && !strings.HasSuffix(strings.TrimRight(before, " \t("), "unpack") {
				return fail("is iterated, its tables with it")
			}
			continue
		case luaTruthAfter.MatchString(after), luaNotBefore.MatchString(before):
			continue
		}
		// Passed to a function: its parameter must be read only too.
		open, arg, start := openCall(before)
		if open < 0 {
			return fail("escapes")
		}
		end := argEnd(after)
		if end < 0 || strings.TrimSpace(after[:end]) != "" || !luaOrOperands.MatchString(strings.TrimLeft(before[start:], " \t")) {
			return fail("escapes in an expression")
		}
		m := luaCallee.FindStringSubmatch(before[:open])
		if m == nil {
			return fail("escapes")
		}
		fn, ok := c.funcs[m[1]]
		if !ok {
			return fail("is passed to " + m[1] + ", which this check cannot read")
		}
		params := strings.Split(fn.code[strings.Index(fn.code, "(")+1:strings.Index(fn.code, ")")], ",")
		if arg >= len(params) {
			return fail("is passed beyond the parameters of " + m[1])
		}
		param := strings.TrimSpace(params[arg])
		if key := m[1] + "#" + param; !c.visited[key] {
			c.visited[key] = true
			body := fn.code[strings.Index(fn.code, ")")+1:]
			if err := c.check(luaCode{where: fn.where, code: body}, param, true, nested); err != nil {
				return fmt.Errorf("%s: %s passed to %s: %w", f.where, name, m[1], err)
			}
		}
	}
	return nil
}

func lineOf(code string, at int) string {
	start := strings.LastIndexByte(code[:at], '\n') + 1
	end := strings.IndexByte(code[at:], '\n')
	if end < 0 {
		return code[start:]
	}
	return code[start : at+end]
}

// matching returns the index of the bracket closing s[0], or -1.
func matching(s string, open, close byte) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// openCall finds the call whose argument list before ends in: the index of its '(',
// the argument's position (0-based) and the index where the argument starts; -1 when
// before is not inside one.
func openCall(before string) (open, arg, start int) {
	depth := 0
	start = -1
	for i := len(before) - 1; i >= 0; i-- {
		switch before[i] {
		case ')', ']', '}':
			depth++
		case '[', '{':
			if depth == 0 {
				return -1, 0, 0
			}
			depth--
		case '(':
			if depth == 0 {
				if start < 0 {
					start = i + 1
				}
				return i, arg, start
			}
			depth--
		case ',':
			if depth == 0 {
				if start < 0 {
					start = i + 1
				}
				arg++
			}
		case ';':
			if depth == 0 {
				return -1, 0, 0
			}
		}
	}
	return -1, 0, 0
}

// argEnd returns where the argument that after continues ends: its ',' or ')'.
func argEnd(after string) int {
	depth := 0
	for i := 0; i < len(after); i++ {
		switch after[i] {
		case '(', '[', '{':
			depth++
		case ']', '}':
			depth--
		case ')':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}
