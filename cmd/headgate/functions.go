package main

import (
	"context"
	"fmt"

	"github.com/headgate/headgate"
)

// functionsCommand shows, loads or prunes the Redis Function libraries of headgate's
// scripts on the server (every master of a cluster). Libraries carry a hash of their
// code in their name, so those of older builds stay until pruned.
var functionsCommand = &command{name: "functions", args: "[load|prune] [-json]",
	summary: "list headgate's Redis Function libraries (current: of this build); load this build's, for ACL users who may not; prune other builds'",
	flags:   jsonFlag, run: cmdFunctions}

func cmdFunctions(ctx context.Context, c *cli, args []string) error {
	if len(args) > 1 {
		return usagef("want at most 1 argument, got %d", len(args))
	}
	verb := "list"
	if len(args) == 1 {
		verb = args[0]
	}
	var libs []headgate.FunctionLibrary
	var err error
	switch verb {
	case "list":
		libs, err = headgate.Functions(ctx, c.rdb)
	case "load":
		if err = headgate.LoadFunctions(ctx, c.rdb); err == nil {
			libs, err = headgate.Functions(ctx, c.rdb)
		}
	case "prune":
		libs, err = headgate.PruneFunctions(ctx, c.rdb)
	default:
		return usagef("unknown verb %q: want load or prune, or none to list", verb)
	}
	if err != nil {
		return err
	}
	if libs == nil {
		libs = []headgate.FunctionLibrary{} // -json: an empty list, not null
	}
	if c.verbs.json {
		return c.printJSON(map[string]any{"libraries": libs})
	}
	if len(libs) == 0 && verb == "list" {
		// Silence would read as a command that did nothing.
		fmt.Fprintf(c.stdout, "no headgate function libraries on %s (a client loads its build's on its first call; "+
			"headgate functions load loads them now)\n", c.addr)
		return nil
	}
	for _, l := range libs {
		current := ""
		if l.Current {
			current = " (current)"
		}
		fmt.Fprintf(c.stdout, "%s %s%s\n", l.Addr, l.Name, current)
	}
	if verb == "prune" {
		fmt.Fprintf(c.stdout, "pruned %d libraries\n", len(libs))
	}
	return nil
}
