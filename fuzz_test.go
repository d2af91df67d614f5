package headgate

import (
	"cmp"
	"encoding/binary"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fuzz targets of what the store decodes from Redis (job hashes, script replies) and
// from users (envelopes, names). Their seeds run as ordinary tests; fuzz one with
// go test -run '^$' -fuzz FuzzJobFromHash -fuzztime 60s .

// hashFromFuzz reads a job hash from s: fields and values alternate, "\x00"-separated.
func hashFromFuzz(s string) map[string]string {
	parts := strings.Split(s, "\x00")
	h := map[string]string{}
	for i := 0; i+1 < len(parts); i += 2 {
		h[parts[i]] = parts[i+1]
	}
	return h
}

func FuzzJobFromHash(f *testing.F) {
	for _, seed := range []string{
		"",
		"state\x00available\x00queue\x00default\x00kind\x00k\x00sched\x001700000000000\x00prio\x00-3",
		"state\x00running\x00fence\x007\x00lease\x00l\x00attempt\x002\x00crash\x001\x00crash:charge\x002\x00step\x00charge\x00done\x00a\nb",
		"maxa\x000\x00weight\x00x\x00schema\x00-1\x00ret\x0099999999999999999999\x00uwin\x00-5",
		"tags\x00a\nb\x00ukey\x00q\nk\nkey:with:colons\x00held\x001\x00created\x001\x00fin\x002",
		"ret\x009223372036854775807\x00uwin\x0010000000000000\x00prio\x004294967297\x00crash:\x00x",
	} {
		f.Add("id", seed)
	}
	f.Fuzz(func(t *testing.T, id, raw string) {
		h := hashFromFuzz(raw)
		j := jobFromHash(id, h, nil)
		parsed := func(field string) (int64, bool) {
			v, err := strconv.ParseInt(h[field], 10, 64)
			return v, err == nil
		}
		// A job of the default queue leaves "queue" out (JOB_DEFAULTS in lua/lib.lua).
		if j.ID != id || j.State != State(h["state"]) || j.Kind != h["kind"] || j.Queue != cmp.Or(h["queue"], QueueDefault) {
			t.Errorf("strings not as stored: %+v from %q", j, h)
		}
		// Absent, zero or unparseable: the default; otherwise what is stored.
		for _, d := range []struct {
			field      string
			got, deflt int
		}{{"maxa", j.MaxAttempts, MaxAttemptsDefault}, {"schema", j.SchemaVersion, SchemaVersionDefault}, {"weight", j.Weight, WeightDefault}} {
			want := d.deflt
			if v, ok := parsed(d.field); ok && v != 0 {
				want = int(v)
			}
			if d.got != want {
				t.Errorf("%s %q decodes as %d, want %d", d.field, h[d.field], d.got, want)
			}
		}
		if v, ok := parsed("prio"); ok && v >= -1<<31 && v < 1<<31 && int64(j.Priority) != v {
			t.Errorf("prio %q decodes as %d", h["prio"], j.Priority)
		}
		if v, ok := parsed("sched"); ok && v != 0 && j.ScheduledAt.UnixMilli() != v {
			t.Errorf("sched %q decodes as %v", h["sched"], j.ScheduledAt)
		}
		// "created" is left out while it equals "sched" (new_job_fields).
		created, ok := parsed("created")
		if !ok || created == 0 {
			created, ok = parsed("sched")
		}
		if ok && created != 0 && j.CreatedAt.UnixMilli() != created {
			t.Errorf("created %q (sched %q) decodes as %v", h["created"], h["sched"], j.CreatedAt)
		}
		// A stored duration that is not negative never decodes as a negative one, however
		// large (ms * 1e6 overflows time.Duration past 292 years).
		for _, d := range []struct {
			field string
			got   time.Duration
		}{{"ret", j.Retention}, {"uwin", j.UniqueWindow}} {
			if v, ok := parsed(d.field); ok && v >= 0 && d.got < 0 {
				t.Errorf("%s %q decodes as negative %v", d.field, h[d.field], d.got)
			}
			if v, ok := parsed(d.field); ok && v >= 0 && v <= int64(time.Duration(1<<63-1)/time.Millisecond) && d.got != time.Duration(v)*time.Millisecond {
				t.Errorf("%s %q decodes as %v", d.field, h[d.field], d.got)
			}
		}
		if tags := h["tags"]; tags != "" && strings.Join(j.Tags, "\n") != tags {
			t.Errorf("tags %q decode as %q", tags, j.Tags)
		}
		if done := h["done"]; done != "" && strings.Join(j.Checkpoint.Done, "\n") != done {
			t.Errorf("done %q decodes as %q", done, j.Checkpoint.Done)
		}
		for f := range h {
			if step, ok := strings.CutPrefix(f, "crash:"); ok {
				if _, ok := j.Checkpoint.CrashesByStep[step]; !ok {
					t.Errorf("crash count of step %q lost", step)
				}
			}
		}
		if j.Held != (h["held"] == "1") {
			t.Errorf("held %q decodes as %v", h["held"], j.Held)
		}
	})
}

func FuzzNormalize(f *testing.F) {
	f.Add("id", "kind", "", "", "", "", "", "", "", int32(0), int64(0), int64(0), int64(0), int64(0), int64(0), 0, 0, 0, uint8(0))
	f.Add("a:b", "k", "q", "tenant:1", "fp", "w1", "rc", "b\na\nb", "u", int32(-7), int64(-5), int64(0), int64(3600000), int64(1000), int64(0), 3, 2, 10, uint8(3))
	f.Add("x", "k", "q:1", "{t}", "f\x7f", "w:1", "", "\n", "", int32(1), int64(1<<53), int64(-1), int64(-1), int64(0), int64(5), -1, -1, 1<<20+1, uint8(255))
	f.Add("x", "k", "", "", "", "", "", "", "", int32(0), int64(-62135596800000), int64(1000), int64(0), int64(0), int64(0), 0, 0, 0, uint8(0))
	f.Fuzz(func(t *testing.T, id, kind, queue, part, fp, sticky, rc, tags, ukey string, prio int32,
		schedMs, schedIn, ret, uwin, udeb int64, maxa, schema, weight int, urepl uint8) {
		in := Envelope{ID: id, Kind: kind, Queue: queue, PartitionKey: part, Fingerprint: fp,
			StickyWorker: sticky, RateClass: rc, UniqueKey: ukey, Priority: prio,
			ScheduledIn: time.Duration(schedIn), Retention: time.Duration(ret), UniqueWindow: time.Duration(uwin),
			UniqueDebounce: time.Duration(udeb), MaxAttempts: maxa, SchemaVersion: schema, Weight: weight,
			UniqueReplace: ReplaceMask(urepl)}
		if schedMs != 0 {
			in.ScheduledAt = time.UnixMilli(schedMs)
		}
		if tags != "" {
			in.Tags = strings.Split(tags, "\n")
		}
		e, err := normalize("e", in)
		if err != nil {
			var iv *InvalidError
			if !errors.As(err, &iv) || !strings.HasPrefix(iv.Field, "e.") || iv.Reason == "" {
				t.Fatalf("refusal %v is not an InvalidError naming an e.* field", err)
			}
			return
		}
		switch {
		case e.Queue == "" || (queue != "" && e.Queue != queue):
			t.Errorf("queue %q normalized to %q", queue, e.Queue)
		case e.MaxAttempts < 1 || e.SchemaVersion < 1 || e.SchemaVersion > MaxSchemaVersion || e.Weight < 1 || e.Weight > MaxWeight:
			t.Errorf("defaults not applied or out of range: maxa %d schema %d weight %d", e.MaxAttempts, e.SchemaVersion, e.Weight)
		case !e.ScheduledAt.IsZero() && (e.ScheduledAt.UnixMilli() < 1 || e.ScheduledAt.UnixMilli() > maxScheduledMs):
			t.Errorf("scheduled at %v (%d ms) reaches the store", e.ScheduledAt, e.ScheduledAt.UnixMilli())
		case !slices.IsSorted(e.Tags) || len(slices.Compact(slices.Clone(e.Tags))) != len(e.Tags) || slices.Contains(e.Tags, ""):
			t.Errorf("tags %q not canonical", e.Tags)
		}
		for _, n := range []string{e.ID, e.Kind, e.PartitionKey, e.Fingerprint, e.RateClass} {
			if validateName("n", n, true) != nil {
				t.Errorf("accepted name %q", n)
			}
		}
		for _, n := range []string{e.Queue, e.StickyWorker} {
			if validateName("n", n, false) != nil {
				t.Errorf("accepted queue or worker name %q", n)
			}
		}
		again, err := normalize("e", e)
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Errorf("normalize is not idempotent: %+v, %v\nfirst %+v", again, err, e)
		}
	})
}

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"", "a", "a:b", "tenant:1:x", "{x}", "a}b", "a\x00", "é", "\xff\xfe", "\x7f", strings.Repeat("n", MaxNameBytes+1)} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, v string, colonOK bool) {
		err := validateName("name", v, colonOK)
		if !colonOK && err == nil && validateName("name", v, true) != nil {
			t.Errorf("%q is a valid queue name but not a valid name", v)
		}
		if err != nil {
			var iv *InvalidError
			if !errors.As(err, &iv) || iv.Field != "name" {
				t.Errorf("refusal %v does not name the field", err)
			}
			return
		}
		if len(v) > MaxNameBytes || strings.ContainsAny(v, "{}") || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) ||
			(!colonOK && strings.Contains(v, ":")) {
			t.Fatalf("accepted %q (colon allowed %v)", v, colonOK)
		}
		// A valid name round-trips through the keys built from it, and never moves a key
		// out of the namespace's hash tag.
		k := newKeys("ns")
		_, n := k.JobPattern()
		if got := k.Job(v)[n:]; got != v {
			t.Errorf("job id %q reads back from its key as %q", v, got)
		}
		if colonOK {
			return
		}
		counts := k.Counts(v)
		if got := strings.TrimSuffix(strings.TrimPrefix(counts, k.Prefix()+"q:"), ":counts"); got != v {
			t.Errorf("queue %q reads back from its key as %q", v, got)
		}
		for _, key := range []string{counts, k.Partition(v, "p"), k.PinnedPartition(v, v, "p")} {
			open := strings.IndexByte(key, '{')
			end := strings.IndexByte(key[open+1:], '}')
			if key[open+1:open+1+end] != "ns" {
				t.Errorf("key %q hashes on %q, not the namespace", key, key[open+1:open+1+end])
			}
		}
	})
}

// replyFromFuzz builds a script reply (what go-redis hands decodeReply: int64, string,
// nil and nested []any) from b.
func replyFromFuzz(b []byte, depth int) (any, []byte) {
	if len(b) == 0 {
		return nil, b
	}
	tag, b := b[0]%4, b[1:]
	switch tag {
	case 0:
		var buf [8]byte
		copy(buf[:], b)
		return int64(binary.LittleEndian.Uint64(buf[:])), b[min(8, len(b)):]
	case 1:
		n := 0
		if len(b) > 0 {
			n, b = int(b[0])%32, b[1:]
		}
		n = min(n, len(b))
		return string(b[:n]), b[n:]
	case 2:
		if depth > 4 || len(b) == 0 {
			return []any{}, b
		}
		n, rest := int(b[0])%8, b[1:]
		out := make([]any, 0, n)
		for range n {
			var v any
			v, rest = replyFromFuzz(rest, depth+1)
			out = append(out, v)
		}
		return out, rest
	}
	return nil, b
}

func FuzzDecodeReply(f *testing.F) {
	f.Add([]byte{2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 'a', 'b', 'c', 0, 5, 0, 0, 0, 0, 0, 0, 0}, false)
	f.Add([]byte{2, 4, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 'i', 'd', 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 3, '0', '1', '0'}, false)
	f.Add([]byte{2, 3, 0, 0xf7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 1, 'k', 1, 1, 'w'}, false)
	f.Add([]byte{1, 2, 'o', 'k'}, true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, b []byte, withErr bool) {
		v, _ := replyFromFuzz(b, 0)
		var in error
		if withErr {
			in = errors.New("ERR from redis")
		}
		rest, err := decodeReply(scriptAck, "job-1", v, in)
		reply, isList := v.([]any)
		ok := !withErr && isList && len(reply) > 0 && reply[0] == any(int64(replyOK))
		switch {
		case ok && (err != nil || !reflect.DeepEqual(rest, reply[1:])):
			t.Errorf("OK reply %v decoded as %v, %v", v, rest, err)
		case !ok && (err == nil || err.Error() == ""):
			t.Errorf("reply %v (error %v) decoded without an error: %v", v, in, rest)
		}
		if isList && len(reply) > 0 {
			code, _ := reply[0].(int64)
			if e := replyError("ack", "job-1", code, reply[1:]); e == nil || e.Error() == "" {
				t.Errorf("code %d gives no error", code)
			}
		}
		list, _ := v.([]any)
		for i := range len(list) + 2 {
			s, n := asString(list, i), asInt(list, i)
			if i >= len(list) {
				if s != "" || n != 0 {
					t.Errorf("index %d past the reply reads %q, %d", i, s, n)
				}
				continue
			}
			switch x := list[i].(type) {
			case int64:
				if n != x || s != strconv.FormatInt(x, 10) {
					t.Errorf("int %d reads as %q, %d", x, s, n)
				}
			case string:
				if s != x {
					t.Errorf("string %q reads as %q", x, s)
				}
				if p, err := strconv.ParseInt(x, 10, 64); err == nil && n != p {
					t.Errorf("decimal string %q reads as %d", x, n)
				}
			}
		}
		h := hashFromReply(v)
		if len(h) > len(list)/2 {
			t.Errorf("hash of %d entries from a list of %d", len(h), len(list))
		}
	})
}
