package rqueue

import "testing"

type countsArgs struct {
	Counts map[string]int `msgpack:"counts"`
}

func (countsArgs) Kind() string { return "counts" }

// TestArgsDigestIsStableForAnyMap: msgpack leaves map[string]int unsorted, yet equal args
// must always have one digest, or UniqueOpts.ByArgs would miss duplicates.
func TestArgsDigestIsStableForAnyMap(t *testing.T) {
	args := countsArgs{Counts: map[string]int{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8}}
	want := ""
	for i := range 50 {
		payload, err := encodeArgs(args)
		if err != nil {
			t.Fatal(err)
		}
		got, err := argsDigest(payload)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			want = got
		} else if got != want {
			t.Fatalf("digest %d of equal args: %s, first was %s", i, got, want)
		}
	}
	other, err := encodeArgs(countsArgs{Counts: map[string]int{"a": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := argsDigest(other); err != nil || d == want {
		t.Errorf("different args share a digest (err %v)", err)
	}
}
