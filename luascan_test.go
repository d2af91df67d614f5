package headgate

import (
	"regexp"
	"strings"
)

// stripLua blanks a Lua source's comments and string literals, so that what remains is
// code: a name inside a string ('holder') or a comment is not a use of it.
func stripLua(src string) string {
	var b strings.Builder
	longClose := func(i int) (string, int) { // at '[': "]==]" and the opening's length, or ""
		j := i + 1
		for j < len(src) && src[j] == '=' {
			j++
		}
		if j < len(src) && src[j] == '[' {
			return "]" + strings.Repeat("=", j-i-1) + "]", j + 1 - i
		}
		return "", 0
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "--"):
			if closing, n := longClose(i + 2); closing != "" && i+2 < len(src) && src[i+2] == '[' {
				end := strings.Index(src[i+2+n:], closing)
				if end < 0 {
					return b.String()
				}
				i += 2 + n + end + len(closing)
				continue
			}
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				return b.String()
			}
			i += end
		case c == '[':
			if closing, n := longClose(i); closing != "" {
				end := strings.Index(src[i+n:], closing)
				if end < 0 {
					return b.String()
				}
				b.WriteString("''")
				i += n + end + len(closing)
				continue
			}
			b.WriteByte(c)
			i++
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteString("''")
			i = j + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

var luaName = regexp.MustCompile(`[A-Za-z_]\w*(?:\.\w+)?`)

// luaNamesUsed returns the names in code (stripped by stripLua) that defined holds,
// each once: a name after '.' or ':' is a field, not a use; "K.job" is a use of K.job.
func luaNamesUsed(code string, defined func(string) bool) []string {
	seen := map[string]bool{}
	var used []string
	for _, loc := range luaName.FindAllStringIndex(code, -1) {
		if loc[0] > 0 && (code[loc[0]-1] == '.' || code[loc[0]-1] == ':') {
			continue
		}
		name := code[loc[0]:loc[1]]
		if !defined(name) {
			name, _, _ = strings.Cut(name, ".") // a field of a defined table, or of a local
		}
		if defined(name) && !seen[name] {
			seen[name] = true
			used = append(used, name)
		}
	}
	return used
}
