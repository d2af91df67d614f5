package rqueue

import (
	"crypto/rand"
	"sync"
	"time"
)

// crockford is Crockford's base32 alphabet: no I, L, O or U, so ids survive being read
// aloud or copied by hand, and its characters sort in the order of their values.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// IDLen is the length of the ids NewID returns.
const IDLen = 26

// NewID returns a new job id: 26 characters of Crockford base32 encoding a 48-bit Unix
// millisecond timestamp followed by 80 random bits, the layout of a ULID. Ids sort by
// creation time (the listing order of the store), and ids made by one process are
// strictly increasing: within a millisecond, or if the host clock steps back, the next
// id is the previous one plus one. Ids from different processes collide with negligible
// probability (80 random bits per millisecond).
//
// The timestamp is the host's clock: it orders ids, it never schedules anything.
func NewID() string { return defaultIDs.next() }

var defaultIDs = &idGen{now: time.Now, rand: func(b []byte) { _, _ = rand.Read(b) }}

// idGen is a monotonic ULID generator; the clock and the random source are fields so
// tests can drive them.
type idGen struct {
	now  func() time.Time
	rand func([]byte) // crypto/rand.Read never fails (it aborts the process instead)

	mu sync.Mutex
	ms uint64 // timestamp of the last id
	hi uint64 // top 16 random bits of the last id
	lo uint64 // low 64 random bits of the last id
}

func (g *idGen) next() string {
	now := uint64(g.now().UnixMilli()) & (1<<48 - 1)
	g.mu.Lock()
	if now > g.ms {
		var b [10]byte
		g.rand(b[:])
		g.ms = now
		g.hi = uint64(b[0])<<8 | uint64(b[1])
		g.lo = 0
		for _, c := range b[2:] {
			g.lo = g.lo<<8 | uint64(c)
		}
	} else {
		// Same millisecond, or the clock stepped back: count up from the last id,
		// carrying into the timestamp if all 80 random bits are spent.
		g.lo++
		if g.lo == 0 {
			g.hi = (g.hi + 1) & 0xffff
			if g.hi == 0 {
				g.ms++
			}
		}
	}
	hi, lo := g.ms<<16|g.hi, g.lo
	g.mu.Unlock()
	return encodeID(hi, lo)
}

// encodeID writes the 128-bit value hi:lo as 26 base32 digits, most significant first
// (the top digit carries the 3 highest bits).
func encodeID(hi, lo uint64) string {
	var out [IDLen]byte
	for i := IDLen - 1; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}
