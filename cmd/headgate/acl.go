package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/headgate/headgate"
)

// aclCommand prints the ACL SETUSER line of a least-privilege Redis user for the
// namespace (headgate.ACLRules). It sends nothing to Redis: an administrator runs the
// line, e.g. with redis-cli, on every node.
var aclCommand = &command{name: "acl", args: "[USER [PASSWORD]]",
	summary: "print the ACL SETUSER line of a least-privilege Redis user for the namespace (USER defaults to hg-NS, PASSWORD to a random one)",
	run:     cmdACL, offline: true}

func cmdACL(_ context.Context, c *cli, args []string) error {
	if len(args) > 2 {
		return usagef("want at most 2 arguments, got %d", len(args))
	}
	user := "hg-" + c.namespace
	if len(args) > 0 {
		user = args[0]
	}
	password := rand.Text()
	if len(args) > 1 {
		password = args[1]
	}
	line, err := headgate.ACLSetUser(user, password, c.namespace)
	var inv *headgate.InvalidError
	if errors.As(err, &inv) {
		// A user, password or namespace the line cannot hold: the command line's mistake.
		return usagef("%s", strings.TrimPrefix(err.Error(), "headgate: "))
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, line)
	return nil
}
