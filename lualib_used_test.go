package headgate

import (
	"strings"
	"testing"
)

// TestLuaLibDefinitionsAreUsed: every definition of lib.lua is included by some script,
// directly or through other definitions; one that nothing includes is dead code, or a
// script forgot to include it.
func TestLuaLibDefinitionsAreUsed(t *testing.T) {
	entries, err := luaFiles.ReadDir("lua")
	if err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".lua")
		if name == "lib" {
			continue
		}
		b, err := luaFiles.ReadFile("lua/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		scripts[name] = string(b)
	}
	if err := lib.checkAllIncluded(scripts); err != nil {
		t.Errorf("%v: a lib.lua definition that no script includes is dead code; delete it, "+
			"or add the `--- @include <name>` line to the script that was meant to call it", err)
	}
}
