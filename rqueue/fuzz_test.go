package rqueue

import (
	"bytes"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// The fuzz targets of what rqueue decodes: msgpack args (the job payload) and the
// canonical digest UniqueOpts.ByArgs names them by. Their seeds run as ordinary tests;
// fuzz one with go test -run '^$' -fuzz FuzzArgsDigest -fuzztime 60s ./rqueue.

func mustEncode(f *testing.F, v any) []byte {
	b, err := encodeArgs(v)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func FuzzArgsDigest(f *testing.F) {
	f.Add(mustEncode(f, countsArgs{Counts: map[string]int{"a": 1, "b": 2}}))
	f.Add(mustEncode(f, map[string]any{"to": "x@example.com", "n": 3, "nested": map[string]any{"z": []any{1.5, nil, true}}}))
	f.Add(mustEncode(f, []any{int64(-1), uint64(1 << 63), "s", []byte{0, 1}}))
	f.Add(mustEncode(f, map[int]string{2: "b", 1: "a"}))
	f.Add([]byte{0x82, 0x01, 0xa1, 'a', 0x01, 0xa1, 'b'}) // a map whose keys repeat
	f.Add([]byte{0xc1})                                   // never used
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, payload []byte) {
		digest, err := argsDigest(payload)
		if err != nil {
			return
		}
		if b, herr := hex.DecodeString(digest); herr != nil || len(b) != 16 {
			t.Fatalf("digest %q is not 16 bytes of hex", digest)
		}
		var v any
		if err := msgpack.Unmarshal(payload, &v); err != nil {
			t.Fatalf("argsDigest accepted what Unmarshal refuses: %v", err)
		}
		canonical, err := encodeArgs(v)
		if err != nil {
			t.Fatalf("decoded args do not encode: %v", err)
		}
		// The canonical form names the same args, and is a fixed point of decode+encode.
		if d, err := argsDigest(canonical); err != nil || d != digest {
			t.Errorf("canonical form digests as %q, %v; payload as %q", d, err, digest)
		}
		var again any
		if err := msgpack.Unmarshal(canonical, &again); err != nil {
			t.Fatalf("canonical form does not decode: %v", err)
		}
		if b, err := encodeArgs(again); err != nil || !bytes.Equal(b, canonical) {
			t.Errorf("canonical form is not stable:\n%x\n%x (%v)", canonical, b, err)
		}
	})
}

// encodeMapInOrder writes a msgpack map with its keys in the given order.
func encodeMapInOrder(t *testing.T, keys []string, value func(string) any) []byte {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.EncodeMapLen(len(keys)); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := enc.EncodeString(k); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(value(k)); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func FuzzArgsDigestMapOrder(f *testing.F) {
	f.Add("a\nb\nc", int64(7))
	f.Add("to\nsubject\nbody\n\n\xff", int64(-1))
	f.Add(strings.Repeat("k\n", 3)+"z", int64(0))
	f.Fuzz(func(t *testing.T, rawKeys string, n int64) {
		keys := slices.Compact(slices.Sorted(slices.Values(strings.Split(rawKeys, "\n"))))
		value := func(k string) any { return map[string]any{"n": n, "k": k, "list": []any{k, n}} }
		sorted := encodeMapInOrder(t, keys, value)
		reversed := encodeMapInOrder(t, reverse(keys), value)
		rotated := encodeMapInOrder(t, append(slices.Clone(keys[len(keys)/2:]), keys[:len(keys)/2]...), value)
		want, err := argsDigest(sorted)
		if err != nil {
			t.Fatalf("digest of a map of strings: %v", err)
		}
		for name, payload := range map[string][]byte{"reversed": reversed, "rotated": rotated} {
			if got, err := argsDigest(payload); err != nil || got != want {
				t.Errorf("map with keys %q %s digests as %q, %v; sorted as %q", keys, name, got, err, want)
			}
		}
		// The same map from Go, whatever order msgpack walks it in.
		m := map[string]any{}
		for _, k := range keys {
			m[k] = value(k)
		}
		viaGo, err := encodeArgs(struct {
			M map[string]any `msgpack:"m"`
		}{m})
		if err != nil {
			t.Fatal(err)
		}
		first, err := argsDigest(viaGo)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			again, err := encodeArgs(struct {
				M map[string]any `msgpack:"m"`
			}{m})
			if err != nil {
				t.Fatal(err)
			}
			if d, err := argsDigest(again); err != nil || d != first {
				t.Errorf("equal maps from Go digest as %q and %q (%v)", first, d, err)
			}
		}
	})
}

func reverse(keys []string) []string {
	out := slices.Clone(keys)
	slices.Reverse(out)
	return out
}
