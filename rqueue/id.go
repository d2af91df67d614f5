package rqueue

import (
	"crypto/rand"
	"sync"
	"time"
)

// idAlphabet is the URL-safe base64 alphabet in ASCII order ('-', digits, upper case,
// '_', lower case), so that ids compare as strings in the order of their values.
const idAlphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// IDLen is the length of the ids NewID returns.
const IDLen = 19

// idTimeBits and idRandBits split an id's 114 bits (19 characters of 6 bits) between
// the Unix millisecond timestamp (44 bits: until the year 2527) and the random bits.
const (
	idTimeBits = 44
	idRandBits = 70
)

// NewID returns a new job id: 19 characters of URL-safe base64 (idAlphabet, in ASCII
// order) encoding a 44-bit Unix millisecond timestamp followed by 70 random bits. Ids
// sort by creation time (the listing order of the store), and ids made by one process
// are strictly increasing: within a millisecond, or if the host clock steps back, the
// next id is the previous one plus one. Ids from different processes collide with
// negligible probability (70 random bits per millisecond).
//
// An id is shorter than a ULID's 26 characters because it is stored several times per
// queued job (the job hash's key, the job indexes, its partition's ranking), and each
// byte there is Redis memory per job; ids are case-sensitive.
//
// The timestamp is the host's clock: it orders ids, it never schedules anything.
func NewID() string { return defaultIDs.next() }

var defaultIDs = &idGen{now: time.Now, rand: func(b []byte) { _, _ = rand.Read(b) }}

// idGen is a monotonic id generator; the clock and the random source are fields so
// tests can drive them.
type idGen struct {
	now  func() time.Time
	rand func([]byte) // crypto/rand.Read never fails (it aborts the process instead)

	mu sync.Mutex
	ms uint64 // timestamp of the last id
	hi uint64 // top 6 random bits of the last id
	lo uint64 // low 64 random bits of the last id
}

const idHiMask = 1<<(idRandBits-64) - 1

func (g *idGen) next() string {
	now := uint64(g.now().UnixMilli()) & (1<<idTimeBits - 1)
	g.mu.Lock()
	if now > g.ms {
		var b [9]byte
		g.rand(b[:])
		g.ms = now
		g.hi = uint64(b[0]) & idHiMask
		g.lo = 0
		for _, c := range b[1:] {
			g.lo = g.lo<<8 | uint64(c)
		}
	} else {
		// Same millisecond, or the clock stepped back: count up from the last id,
		// carrying into the timestamp if all 70 random bits are spent.
		g.lo++
		if g.lo == 0 {
			g.hi = (g.hi + 1) & idHiMask
			if g.hi == 0 {
				g.ms++
			}
		}
	}
	hi, lo := g.ms<<(idRandBits-64)|g.hi, g.lo
	g.mu.Unlock()
	return encodeID(hi, lo)
}

// encodeID writes the 114-bit value hi:lo (hi holds the top 50 bits) as 19 base64
// digits of idAlphabet, most significant first.
func encodeID(hi, lo uint64) string {
	var out [IDLen]byte
	for i := IDLen - 1; i >= 0; i-- {
		out[i] = idAlphabet[lo&63]
		lo = lo>>6 | hi<<58
		hi >>= 6
	}
	return string(out[:])
}
