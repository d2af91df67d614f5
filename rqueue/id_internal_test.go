package rqueue

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeGen returns a generator on a settable clock and a seeded random source.
func fakeGen(seed uint64) (*idGen, *time.Time) {
	now := time.UnixMilli(1_700_000_000_000)
	r := rand.New(rand.NewPCG(seed, seed))
	return &idGen{
		now: func() time.Time { return now },
		rand: func(b []byte) {
			for i := range b {
				b[i] = byte(r.Uint32())
			}
		},
	}, &now
}

func TestEncodeID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		hi, lo uint64
		want   string
	}{
		{0, 0, "-------------------"},
		{0, 1, "------------------0"},
		{0, 63, "------------------z"},
		{0, 64, "-----------------0-"},
		// Only the low 50 bits of hi are an id's.
		{^uint64(0), ^uint64(0), "zzzzzzzzzzzzzzzzzzz"},
		{1<<50 | 1, 0, "--------F----------"},
		// Timestamp 1469922850259 (the ULID spec's example), no random bits.
		{1469922850259 << 6, 0, "4LEYepok-----------"},
	} {
		if got := encodeID(tc.hi, tc.lo); got != tc.want {
			t.Errorf("encodeID(%#x, %#x) = %s, want %s", tc.hi, tc.lo, got, tc.want)
		}
	}
}

// TestEncodeIDOrder checks that string order is numeric order, which is what makes ids
// list in creation order.
func TestEncodeIDOrder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	type val struct{ hi, lo uint64 }
	vals := make([]val, 2000)
	for i := range vals {
		vals[i] = val{r.Uint64() >> r.IntN(64) & (1<<50 - 1), r.Uint64()}
		if i%3 == 0 {
			vals[i].hi = vals[i-i%6].hi // equal high halves compare by the low half
		}
	}
	slices.SortFunc(vals, func(a, b val) int {
		if a.hi != b.hi {
			return cmpU(a.hi, b.hi)
		}
		return cmpU(a.lo, b.lo)
	})
	for i := 1; i < len(vals); i++ {
		a, b := encodeID(vals[i-1].hi, vals[i-1].lo), encodeID(vals[i].hi, vals[i].lo)
		if vals[i-1] != vals[i] && a >= b {
			t.Fatalf("%v < %v but %s >= %s", vals[i-1], vals[i], a, b)
		}
	}
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestIDGenMonotonic(t *testing.T) {
	t.Parallel()
	g, now := fakeGen(7)
	// The first 7 characters hold only timestamp bits (44 = 7 * 6 + 2).
	prefix := func(id string) string { return id[:7] }

	a := g.next()
	if !strings.HasPrefix(a, encodeID(uint64(now.UnixMilli())<<6, 0)[:7]) {
		t.Errorf("id %s does not start with the timestamp of %s", a, *now)
	}
	// Same millisecond: the next id is the previous one plus one.
	b := g.next()
	if b <= a || prefix(b) != prefix(a) {
		t.Errorf("same-ms ids %s, %s: want increasing with one timestamp", a, b)
	}
	// The clock steps back: ids still increase, keeping the later timestamp.
	*now = now.Add(-time.Second)
	c := g.next()
	if c <= b || prefix(c) != prefix(b) {
		t.Errorf("after a clock step back: %s after %s, want increasing", c, b)
	}
	// A new millisecond draws new random bits.
	*now = now.Add(2 * time.Second)
	d := g.next()
	if d <= c || prefix(d) == prefix(c) {
		t.Errorf("next-ms id %s after %s: want a later timestamp", d, c)
	}
}

func TestIDGenCarry(t *testing.T) {
	t.Parallel()
	g, now := fakeGen(1)
	g.rand = func(b []byte) {
		for i := range b {
			b[i] = 0xff
		}
	}
	last := g.next() // all 70 random bits set
	next := g.next() // overflows into the timestamp
	if next <= last {
		t.Fatalf("carry: %s after %s, want increasing", next, last)
	}
	if want := encodeID(uint64(now.UnixMilli()+1)<<6, 0); next != want {
		t.Errorf("carry: got %s, want %s (timestamp+1, zero random)", next, want)
	}
}

func TestNewIDConcurrent(t *testing.T) {
	t.Parallel()
	const goroutines, perG = 8, 5000
	got := make([][]string, goroutines)
	done := make(chan int)
	for g := range goroutines {
		go func() {
			ids := make([]string, perG)
			for i := range ids {
				ids[i] = NewID()
			}
			got[g] = ids
			done <- g
		}()
	}
	for range goroutines {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("id generators did not finish")
		}
	}
	seen := make(map[string]bool, goroutines*perG)
	for g, ids := range got {
		for i, id := range ids {
			if len(id) != IDLen || strings.Trim(id, idAlphabet) != "" {
				t.Fatalf("id %q is not %d characters of idAlphabet", id, IDLen)
			}
			if seen[id] {
				t.Fatalf("id %s generated twice", id)
			}
			seen[id] = true
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("goroutine %d: id %s after %s, want strictly increasing", g, id, ids[i-1])
			}
		}
	}
}
