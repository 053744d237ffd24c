package server

import (
	"hash/maphash"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Defaults of the failed-login limits: per username and per client address, each.
const (
	DefaultLoginFailLimit  = 10
	DefaultLoginFailWindow = time.Minute
	// loginLimitKeys caps the keys tracked per table; beyond it the oldest is evicted.
	loginLimitKeys = 10_000
)

// loginLimits refuses logins with 429 once a username or a client address has used up
// its failed attempts in the current window, before argon2 is spent on the password.
// One mutex guards both tables so check-and-count is atomic across them; logins are
// rare enough (argon2 bounds them) that it never contends.
type loginLimits struct {
	mu     sync.Mutex
	limit  int32
	window time.Duration
	now    func() time.Time
	// Keys are seeded 64-bit hashes rather than the strings themselves, so an entry's
	// size does not depend on what the client sent (a 1 MiB "username").
	seed  maphash.Seed
	users failTable
	addrs failTable
}

func newLoginLimits(limit int, window time.Duration, maxKeys int, now func() time.Time) *loginLimits {
	return &loginLimits{
		limit: int32(limit), window: window, now: now, seed: maphash.MakeSeed(),
		users: newFailTable(maxKeys), addrs: newFailTable(maxKeys),
	}
}

// loginAttempt is a counted attempt; call succeeded when the password was right.
type loginAttempt struct {
	l          *loginLimits
	user, addr uint64
}

// begin counts an attempt against the username and the address before the password is
// checked, so parallel guesses cannot all slip past the check; a success gives the
// attempt back. When either key is exhausted nothing is counted and the error is a 429.
func (l *loginLimits) begin(username string, addr netip.Addr) (loginAttempt, error) {
	a := loginAttempt{l: l, user: maphash.String(l.seed, username), addr: l.addrKey(addr)}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	wait := max(l.users.retryAfter(a.user, now, l.limit, l.window), l.addrs.retryAfter(a.addr, now, l.limit, l.window))
	if wait > 0 {
		return a, &apiError{status: http.StatusTooManyRequests, retryAfter: wait,
			detail: "too many failed logins for this account or from this address; wait before trying again"}
	}
	l.users.add(a.user, now, l.window)
	l.addrs.add(a.addr, now, l.window)
	return a, nil
}

// succeeded gives the attempt back: successful logins do not count.
func (a loginAttempt) succeeded() {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	a.l.users.refund(a.user)
	a.l.addrs.refund(a.addr)
}

// addrKey hashes an IPv4 address whole and an IPv6 address by its /64, the block one
// subscriber usually gets: counting single IPv6 addresses would be no limit at all.
func (l *loginLimits) addrKey(addr netip.Addr) uint64 {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		addr = p.Addr()
	}
	b := addr.As16() // the zero Addr (unknown peer) becomes all zeros: one shared key
	return maphash.Bytes(l.seed, b[:])
}

// failTable counts failures per key in fixed windows that start at a key's first
// failure. Entries live in a slab of at most max slots, linked oldest window first, so
// every operation is O(1), memory is bounded and steady-state use does not allocate.
type failTable struct {
	max   int
	index map[uint64]int32
	slots []failSlot
	// head is the oldest window, tail the newest; free chains unused slots. -1 is none.
	head, tail, free int32
}

type failSlot struct {
	key        uint64
	start      time.Time
	count      int32
	prev, next int32
}

func newFailTable(max int) failTable {
	return failTable{max: max, index: make(map[uint64]int32), head: -1, tail: -1, free: -1}
}

func expired(start, now time.Time, window time.Duration) bool {
	// A clock that went backwards (no RTC, NTP catching up) must not lock anyone out
	// for longer than one window.
	d := now.Sub(start)
	return d >= window || d < 0
}

// retryAfter is how long key must wait, or 0 when it may try now.
func (t *failTable) retryAfter(key uint64, now time.Time, limit int32, window time.Duration) time.Duration {
	i, ok := t.index[key]
	if !ok {
		return 0
	}
	s := &t.slots[i]
	if s.count < limit || expired(s.start, now, window) {
		return 0
	}
	return s.start.Add(window).Sub(now)
}

// add counts one failure of key, opening a new window when its last one is over.
func (t *failTable) add(key uint64, now time.Time, window time.Duration) {
	if i, ok := t.index[key]; ok {
		s := &t.slots[i]
		if !expired(s.start, now, window) {
			s.count++
			return
		}
		t.unlink(i)
		s.start, s.count = now, 1
		t.pushTail(i)
		return
	}
	// Windows that are over cost nothing to forget; each is dropped once, so this loop
	// is O(1) amortised.
	for t.head >= 0 && expired(t.slots[t.head].start, now, window) {
		t.remove(t.head)
	}
	if len(t.index) >= t.max {
		t.remove(t.head)
	}
	i := t.free
	if i >= 0 {
		t.free = t.slots[i].next
	} else {
		t.slots = append(t.slots, failSlot{})
		i = int32(len(t.slots) - 1)
	}
	t.slots[i] = failSlot{key: key, start: now, count: 1}
	t.index[key] = i
	t.pushTail(i)
}

// refund takes back one failure of key, if it is still tracked. An entry left with no
// failures is dropped, so a stream of successful logins cannot push out the entries
// of failing keys.
func (t *failTable) refund(key uint64) {
	i, ok := t.index[key]
	if !ok {
		return
	}
	if t.slots[i].count--; t.slots[i].count <= 0 {
		t.remove(i)
	}
}

func (t *failTable) remove(i int32) {
	t.unlink(i)
	delete(t.index, t.slots[i].key)
	t.slots[i] = failSlot{next: t.free}
	t.free = i
}

func (t *failTable) unlink(i int32) {
	s := &t.slots[i]
	if s.prev >= 0 {
		t.slots[s.prev].next = s.next
	} else {
		t.head = s.next
	}
	if s.next >= 0 {
		t.slots[s.next].prev = s.prev
	} else {
		t.tail = s.prev
	}
}

func (t *failTable) pushTail(i int32) {
	s := &t.slots[i]
	s.prev, s.next = t.tail, -1
	if t.tail >= 0 {
		t.slots[t.tail].next = i
	} else {
		t.head = i
	}
	t.tail = i
}
