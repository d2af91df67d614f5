package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// measureZset counts what one job index entry costs Redis at the least: a script's ZADD
// (score = an entry time, ms; one score for the call's members, as a batch files them)
// of n members into a sorted set of 20,000, then its ZREM of them, each less the same
// script without the command (the Lua that builds the arguments). A job that is
// enqueued, admitted and acked moves through two such indexes (available, running): two
// ZADDs and two ZREMs are the floor of what the indexes cost it, whatever the Lua around
// them does. Hash and set commands of the same members are printed beside them.
func measureZset(ctx context.Context, rdb *redis.Client, n int, measure func(name string, jobs int, f func() error) error) error {
	// The members look like job ids (19 characters) and the scores like store times.
	const build = `local args = {} for i = 1, tonumber(ARGV[1]) do
  if ARGV[3] == 'scored' then args[#args + 1] = ARGV[4] end
  args[#args + 1] = string.format('%s%07d', ARGV[2], i)
  if ARGV[3] == 'valued' then args[#args + 1] = '1765130000001' end
end `
	eval := func(body, prefix, shape string) func() error {
		return func() error {
			return rdb.Eval(ctx, build+body+" return 1", []string{"{cgz}"}, n, prefix, shape, "1765130001000").Err()
		}
	}
	// A sorted set of 20,000 entries, as an index of a backlog is, filed by earlier calls.
	for i := range 10 {
		if err := rdb.Eval(ctx, build+"redis.call('ZADD', KEYS[1] .. ':z', unpack(args)) return 1",
			[]string{"{cgz}"}, 2000, fmt.Sprintf("01KBF8ZQ0D%02d", i), "scored", fmt.Sprint(1765130000000+i)).Err(); err != nil {
			return err
		}
	}
	for _, c := range []struct{ name, body, shape string }{
		{"zset: arguments alone (scored)", "", "scored"},
		{"zset: ZADD", "redis.call('ZADD', KEYS[1] .. ':z', unpack(args))", "scored"},
		{"zset: arguments alone", "", ""},
		{"zset: ZREM", "redis.call('ZREM', KEYS[1] .. ':z', unpack(args))", ""},
		{"zset: SADD", "redis.call('SADD', KEYS[1] .. ':s', unpack(args))", ""},
		{"zset: SREM", "redis.call('SREM', KEYS[1] .. ':s', unpack(args))", ""},
	} {
		if err := measure(c.name, n, eval(c.body, "01KBF8ZQ0DZZ", c.shape)); err != nil {
			return err
		}
	}
	return nil
}
