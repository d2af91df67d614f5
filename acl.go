package headgate

import (
	"fmt"
	"strings"
)

// aclScriptCommands are the commands the scripts in lua/ call. A script runs with its
// caller's permissions, so the user needs each of them; TestACLCoversScriptCommands keeps
// the list in step with the scripts.
var aclScriptCommands = []string{
	"del", "exists", "get", "hdel", "hexists", "hget", "hgetall", "hincrby", "hlen", "hmget",
	"hset", "lindex", "llen", "lpop", "lset", "ltrim", "publish", "rpush", "sadd", "scard",
	"sismember", "spop", "srandmember",
	"set", "srem", "time", "type", "zadd", "zcard", "zcount", "zrange", "zrangebyscore", "zrem",
	"zremrangebyrank", "zscore",
	"zrank", "zremrangebyscore", // why, heartbeat
	"pexpire",         // admit: the minute's admissions by partition
	"object|encoding", // zadd_skiplist (lua/lib.lua): keeps the running jobs' sets skiplists
}

// aclClientCommands are the commands workers, producers and inspectors send themselves.
var aclClientCommands = []string{
	// Every transition: FCALL of its Redis Function, or EVALSHA (EVAL when the server
	// lacks the script). Not FUNCTION LOAD: a tenant who could load a library could plant
	// code under a name other tenants' clients call; without it a client runs EVAL until
	// an operator loads the functions (LoadFunctions).
	"evalsha", "eval", "fcall",
	"wait",                     // StoreConfig.DurableReplicas
	"blpop",                    // the workers' wait for work
	"subscribe", "unsubscribe", // the workers' cancel channel
	"hgetall", "hset", "hdel", "lrange", "zscore", "smembers", "sadd", "srem", "rpush", "del",
	"get", "set", "time", // reads and operator writes (GetJob, QueueStats, PauseQueue, clocks)
	"hget", "hmget", "hlen", "hscan", "zcard", "zrange", "zrangebyscore", "lindex", // workflow and corrupt-job reads, metrics gauges
	"multi", "exec", "zadd", // RemoveRateLimit
	"zcount", // QueueStats: the live workers of each queue
	"ping",   // connection health checks
	"info",   // CheckServer (INFO memory)
	// The worker's wait connection. (go-redis also sends CLIENT SETINFO, which Redis 7.0
	// lacks, so no rule can name it there; a refusal of it is ignored.)
	"client|id",
	"cluster|slots", "cluster|shards", "readonly", "command", // Redis Cluster clients (COMMAND: key positions)
}

// ACLRules returns the rules of a least-privilege Redis ACL user for namespace: access
// to the namespace's keys and channels (hg:{<namespace>}:*) and to the commands headgate
// sends, nothing else. Workers, producers and inspectors of the namespace work with it;
// a client logged in as it cannot read or write another namespace (NOPERM).
//
// Left out on purpose: CLIENT UNBLOCK (a worker stopping ends its wait by closing that
// connection instead) and every admin command. The rules start with "reset", so applying
// them replaces whatever the user had; add "on" and a password:
//
//	ACL SETUSER hg-orders on >secret <ACLRules("orders")...>
func ACLRules(namespace string) ([]string, error) {
	if err := validateRequired("namespace", namespace, true); err != nil {
		return nil, err
	}
	// A namespace may hold glob characters ("a*"); escaped, they match only themselves.
	pattern := escapeGlob(newKeys(namespace).Prefix()) + "*"
	rules := []string{"reset", "~" + pattern, "&" + pattern, "-@all"}
	seen := map[string]bool{}
	for _, c := range append(append([]string(nil), aclClientCommands...), aclScriptCommands...) {
		if !seen[c] {
			seen[c] = true
			rules = append(rules, "+"+c)
		}
	}
	return rules, nil
}

// ACLSetUser returns the ACL SETUSER command line (as for redis-cli) that creates or
// resets user with password for namespace, following ACLRules. Quote it as your shell
// needs: the key pattern holds braces.
func ACLSetUser(user, password, namespace string) (string, error) {
	rules, err := ACLRules(namespace)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(namespace, " \t") {
		return "", invalid("namespace", "%q holds white space: pass ACLRules to ACL SETUSER as separate arguments", namespace)
	}
	if user == "" || strings.ContainsAny(user, " \t\r\n") {
		return "", invalid("user", "%q is empty or holds white space", user)
	}
	if password == "" || strings.ContainsAny(password, " \t\r\n") {
		return "", invalid("password", "is empty or holds white space")
	}
	return fmt.Sprintf("ACL SETUSER %s %s on >%s %s", user, rules[0], password, strings.Join(rules[1:], " ")), nil
}

// escapeGlob escapes the characters Redis's glob patterns treat specially.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
