package headgate

import (
	"context"
	"embed"
	"fmt"
	"regexp"
	"strings"

	"github.com/headgate/headgate/internal/reroute"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Reply codes of the scripts (lua/lib.lua), translated by replyError.
const (
	replyOK             = 0
	replyIDConflict     = -1
	replyDuplicate      = -2
	replyQuarantined    = -3
	replyBackpressure   = -4
	replyLeaseRejected  = -5
	replyNotFound       = -7
	replyNotCancellable = -8
	replyCorrupt        = -9
)

// script is one transition: the parts of lua/lib.lua it uses, then lua/<name>.lua, run
// as one EVAL.
type script struct {
	name string
	*redis.Script
}

func loadScript(name string) script {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return script{name: name, Script: redis.NewScript(libFor(string(lib), string(body)) + "\n" + string(body))}
}

// libChunk is one top-level definition of lua/lib.lua with the comment above it.
type libChunk struct {
	defines []string
	text    string
}

var (
	luaDefinition = regexp.MustCompile(`^(?:local function ([A-Za-z_]\w*)|function (K\.\w+)|local ([A-Za-z_][\w, ]*?)\s*=)`)
	luaIdentifier = regexp.MustCompile(`K\.\w+|[A-Za-z_]\w*`)
)

// parseLib splits lib.lua into its top-level definitions: a definition starts at a line
// in column 0 that begins with "local" or "function"; comment lines in column 0 belong to
// the definition below them.
func parseLib(src string) []libChunk {
	_, src, _ = strings.Cut(src, "]]\n") // the header
	var chunks []libChunk
	var comments []string
	for line := range strings.Lines(src) {
		switch m := luaDefinition.FindStringSubmatch(line); {
		case m != nil:
			c := libChunk{text: strings.Join(comments, "") + line}
			for _, names := range m[1:] {
				for n := range strings.SplitSeq(names, ",") {
					if n = strings.TrimSpace(n); n != "" {
						c.defines = append(c.defines, n)
					}
				}
			}
			chunks = append(chunks, c)
			comments = nil
		case strings.HasPrefix(line, "--"):
			comments = append(comments, line)
		case len(chunks) > 0:
			chunks[len(chunks)-1].text += line
		}
	}
	return chunks
}

// libFor returns the definitions of lib.lua that body uses, directly or through other
// definitions, in lib.lua's order. Lua runs a script's whole text on every call, so
// leaving out what a script does not use keeps each call cheap.
func libFor(lib, body string) string {
	chunks := parseLib(lib)
	definedBy := map[string]int{}
	for i, c := range chunks {
		for _, n := range c.defines {
			definedBy[n] = i
		}
	}
	included := make([]bool, len(chunks))
	var visit func(text string)
	visit = func(text string) {
		for _, id := range luaIdentifier.FindAllString(text, -1) {
			names := []string{id}
			if strings.HasPrefix(id, "K.") {
				names = append(names, "K") // the table K.* functions live in
			}
			for _, n := range names {
				if i, ok := definedBy[n]; ok && !included[i] {
					included[i] = true
					visit(chunks[i].text)
				}
			}
		}
	}
	visit(body)
	var b strings.Builder
	for i, c := range chunks {
		if included[i] {
			b.WriteString(c.text)
		}
	}
	return b.String()
}

// The transitions, one script each.
var (
	scriptEnqueue           = loadScript("enqueue")
	scriptAdmit             = loadScript("admit")
	scriptAck               = loadScript("ack")
	scriptRenew             = loadScript("renew")
	scriptCheckpoint        = loadScript("checkpoint")
	scriptReclaim           = loadScript("reclaim")
	scriptPromote           = loadScript("promote")
	scriptEvict             = loadScript("evict")
	scriptClaimDuty         = loadScript("claim_duty")
	scriptReleaseDuty       = loadScript("release_duty")
	scriptWriteOutput       = loadScript("write_output")
	scriptWriteProgress     = loadScript("write_progress")
	scriptCancel            = loadScript("cancel")
	scriptReleasePending    = loadScript("release_pending")
	scriptReleaseQuarantine = loadScript("release_quarantine")
	scriptSetRateLimit      = loadScript("set_rate_limit")
)

// scriptKeys is what every script takes as KEYS: the namespace prefix, from which each
// script derives the keys its header lists.
func (s *Store) scriptKeys() []string { return []string{s.keys.Prefix()} }

// run executes a script (EVALSHA, then EVAL when the server lacks it, as after a restart
// or failover) and returns its reply after the status code, or the typed error the code
// stands for.
func (s *Store) run(ctx context.Context, sc script, jobID string, args ...any) ([]any, error) {
	v, err := sc.Run(ctx, s.rdb, s.scriptKeys(), args...).Result()
	if err != nil {
		// After a failover, point a cluster client at the slot's new master before the
		// caller retries.
		reroute.AfterFailure(s.rdb, err)
	}
	return decodeReply(sc, jobID, v, err)
}

// runDurable is run followed, on the same connection, by WAIT for the configured number
// of replicas: Redis replicates asynchronously, and only WAIT tells a producer that a
// write would survive the loss of the master.
func (s *Store) runDurable(ctx context.Context, sc script, args ...any) ([]any, error) {
	node, err := s.node(ctx)
	if err != nil {
		return nil, err
	}
	for _, eval := range []bool{false, true} {
		pipe := node.Pipeline()
		var cmd *redis.Cmd
		if eval {
			cmd = sc.Eval(ctx, pipe, s.scriptKeys(), args...)
		} else {
			cmd = sc.EvalSha(ctx, pipe, s.scriptKeys(), args...)
		}
		wait := pipe.Do(ctx, "WAIT", s.cfg.DurableReplicas, ms(s.cfg.DurableTimeout))
		_, _ = pipe.Exec(ctx) // errors are read from each command
		if !eval && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			continue
		}
		if cmd.Err() != nil {
			// A MOVED reply to a call on one node never reaches the cluster client's
			// slot map by itself.
			reroute.AfterFailure(s.rdb, cmd.Err())
		}
		reply, err := decodeReply(sc, "", cmd.Val(), cmd.Err())
		if err != nil {
			return nil, err
		}
		acked, err := wait.Int()
		if err != nil {
			return reply, fmt.Errorf("headgate: %s: wait for replicas: %w", sc.name, err)
		}
		if acked < s.cfg.DurableReplicas {
			return reply, &NotDurableError{Replicas: acked, Wanted: s.cfg.DurableReplicas}
		}
		return reply, nil
	}
	panic("unreachable")
}

func decodeReply(sc script, jobID string, v any, err error) ([]any, error) {
	if err != nil {
		return nil, fmt.Errorf("headgate: %s: %w", sc.name, err)
	}
	reply, ok := v.([]any)
	if !ok || len(reply) == 0 {
		return nil, fmt.Errorf("headgate: %s: unexpected reply %v", sc.name, v)
	}
	code, _ := reply[0].(int64)
	if code != replyOK {
		return nil, replyError(sc.name, jobID, code, reply[1:])
	}
	return reply[1:], nil
}

// replyError translates a script's error reply into the typed error it stands for.
func replyError(script, jobID string, code int64, rest []any) error {
	switch code {
	case replyIDConflict:
		return &IDConflictError{JobID: asString(rest, 0)}
	case replyDuplicate:
		return &DuplicateError{ExistingID: asString(rest, 0), Replaced: asInt(rest, 1) == 1,
			State: State(asString(rest, 2)), ScheduledAt: fromMs(asInt(rest, 3))}
	case replyQuarantined:
		return &QuarantinedError{Fingerprint: asString(rest, 0)}
	case replyBackpressure:
		return &BackpressureError{Queue: asString(rest, 0), Limit: asInt(rest, 1), Current: asInt(rest, 2), Incoming: asInt(rest, 3)}
	case replyLeaseRejected:
		return &LeaseRejectedError{JobID: jobID}
	case replyNotFound:
		return fmt.Errorf("%w: %q", ErrJobNotFound, jobID)
	case replyNotCancellable:
		return &NotCancellableError{JobID: jobID, State: State(asString(rest, 0))}
	case replyCorrupt:
		return &CorruptError{Key: asString(rest, 0), Reason: asString(rest, 1)}
	}
	return fmt.Errorf("headgate: %s: unexpected reply code %d %v", script, code, rest)
}

func asString(v []any, i int) string {
	if i >= len(v) {
		return ""
	}
	switch x := v[i].(type) {
	case string:
		return x
	case int64:
		return fmt.Sprint(x)
	}
	return ""
}

func asInt(v []any, i int) int64 {
	if i >= len(v) {
		return 0
	}
	switch x := v[i].(type) {
	case int64:
		return x
	case string:
		var n int64
		fmt.Sscan(x, &n)
		return n
	}
	return 0
}

// hashFromReply turns an HGETALL list inside a script reply into a map.
func hashFromReply(v any) map[string]string {
	list, _ := v.([]any)
	h := make(map[string]string, len(list)/2)
	for i := 0; i+1 < len(list); i += 2 {
		h[asString(list, i)] = asString(list, i+1)
	}
	return h
}
