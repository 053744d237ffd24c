package server

import (
	"context"
	"hash/maphash"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Defaults of the failed-login limits: per account and per client address, each.
const (
	DefaultLoginFailLimit  = 10
	DefaultLoginFailWindow = time.Minute
	// limitKeys caps the keys tracked per table. A full table evicts the key whose
	// window started first among those not at their limit; a key at its limit is
	// never evicted.
	limitKeys = 10_000
)

// attemptLimits refuses an operation with 429 once one of its keys (a username, a
// client address, the whole server) has used up what its window allows. Only settled
// outcomes count: an attempt reserves room in every window before the costly work
// (argon2) and settles when the result is known, counting only if it says so (a wrong
// password, an account created). Reservations keep a burst of parallel attempts
// within the limit: an attempt that would need more room than is left beside those
// in flight waits for one of them to settle instead of being refused, since they
// may yet not count. An attempt given up before its result (the client went away
// while it queued) gives its reservation back.
//
// One mutex guards every table so check-and-reserve is atomic across them; the
// operations are rare enough (argon2 bounds them) that it never contends.
type attemptLimits struct {
	mu   sync.Mutex
	now  func() time.Time
	dims []*limitDim
	// settled is closed, and replaced, whenever an attempt settles: waiters re-check.
	settled chan struct{}
	// waiting, when set by a test, runs when an attempt starts waiting for room.
	waiting func()
}

// limitDim is one kind of key: its limit, window, settled counts, reservations and
// attempts waiting for room.
type limitDim struct {
	limit   int32
	window  time.Duration
	counts  windowTable
	pending map[uint64]int32
	waiters map[uint64]int32
	msg     limitMessages
}

// limitMessages are a limitDim's 429 details.
type limitMessages struct {
	// exhausted answers a key at its limit; full, a new key when the table holds only
	// keys at their limit; busy, a key with as many attempts waiting as its limit.
	exhausted, full, busy string
}

// busyRetry is the Retry-After of a key with too many attempts waiting: those in
// flight settle within a hash or two.
const busyRetry = time.Second

func newLimitDim(limit int, window time.Duration, maxKeys int, msg limitMessages) *limitDim {
	return &limitDim{limit: int32(limit), window: window, counts: newWindowTable(maxKeys),
		pending: make(map[uint64]int32), waiters: make(map[uint64]int32), msg: msg}
}

func newAttemptLimits(now func() time.Time, dims ...*limitDim) *attemptLimits {
	return &attemptLimits{now: now, dims: dims, settled: make(chan struct{})}
}

// reservation is room held in every window of an attempt; settle it exactly once.
type reservation struct {
	l    *attemptLimits
	keys []uint64
}

// begin reserves room for one attempt under keys (one per dimension, in order). It
// waits while only reservations in flight stand in the way, and returns a 429
// apiError when a key has used up its window, or the context's error. At most as
// many attempts as the limit wait per key; more are refused at once, so that a
// flood of attempts at one key cannot hold request slots while it waits.
func (l *attemptLimits) begin(ctx context.Context, keys ...uint64) (reservation, error) {
	var blocked []int // the dimensions whose room attempts in flight hold
	for {
		l.mu.Lock()
		now := l.now()
		blocked = blocked[:0]
		for i, d := range l.dims {
			k := keys[i]
			if retry := d.counts.retryAfter(k, now, d.limit, d.window); retry > 0 {
				l.mu.Unlock()
				return reservation{}, tooMany(d.msg.exhausted, retry)
			}
			if retry := d.counts.roomFor(k, now, d.window); retry > 0 {
				l.mu.Unlock()
				return reservation{}, tooMany(d.msg.full, retry)
			}
			if d.counts.count(k, now, d.window)+d.pending[k] >= d.limit {
				if d.waiters[k] >= d.limit {
					l.mu.Unlock()
					return reservation{}, tooMany(d.msg.busy, busyRetry)
				}
				blocked = append(blocked, i)
			}
		}
		if len(blocked) == 0 {
			for i, d := range l.dims {
				d.pending[keys[i]]++
			}
			l.mu.Unlock()
			return reservation{l: l, keys: keys}, nil
		}
		l.addWaiters(blocked, keys, 1)
		settled := l.settled
		if l.waiting != nil {
			l.waiting()
		}
		l.mu.Unlock()
		var err error
		select {
		case <-settled:
		case <-ctx.Done():
			err = ctx.Err()
		}
		l.mu.Lock()
		l.addWaiters(blocked, keys, -1)
		l.mu.Unlock()
		if err != nil {
			return reservation{}, err
		}
	}
}

func (l *attemptLimits) addWaiters(dims []int, keys []uint64, n int32) {
	for _, i := range dims {
		d, k := l.dims[i], keys[i]
		if d.waiters[k] += n; d.waiters[k] <= 0 {
			delete(d.waiters, k)
		}
	}
}

// settle gives the reservation back and, when counted, counts the attempt against
// every key.
func (r reservation) settle(counted bool) {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for i, d := range l.dims {
		k := r.keys[i]
		if d.pending[k]--; d.pending[k] <= 0 {
			delete(d.pending, k)
		}
		if counted {
			d.counts.add(k, now, d.window, d.limit)
		}
	}
	close(l.settled)
	l.settled = make(chan struct{})
}

func tooMany(detail string, retry time.Duration) error {
	return &apiError{status: http.StatusTooManyRequests, retryAfter: retry, detail: detail}
}

// loginLimits limits failed logins per account and per client address. Keys are
// seeded 64-bit hashes rather than the strings themselves, so an entry's size does not
// depend on what the client sent (a 1 MiB "username").
type loginLimits struct {
	*attemptLimits
	seed maphash.Seed
}

func newLoginLimits(limit int, window time.Duration, maxKeys int, now func() time.Time) *loginLimits {
	msg := limitMessages{
		exhausted: "too many failed logins for this account or from this address; wait before trying again",
		full:      "too many failed logins on this server right now; wait before trying again",
		busy:      "too many logins for this account or from this address at once; try again in a moment",
	}
	return &loginLimits{
		attemptLimits: newAttemptLimits(now, newLimitDim(limit, window, maxKeys, msg), newLimitDim(limit, window, maxKeys, msg)),
		seed:          maphash.MakeSeed(),
	}
}

// begin reserves a login attempt of the account with identity key account (see
// identity: never the name as typed) from addr; settle it with true when the password
// was checked and found wrong.
func (l *loginLimits) begin(ctx context.Context, account string, addr netip.Addr) (reservation, error) {
	return l.attemptLimits.begin(ctx, maphash.String(l.seed, account), addrKey(l.seed, addr))
}

// addrKey hashes an IPv4 address whole and an IPv6 address by its /64, the block one
// subscriber usually gets: counting single IPv6 addresses would be no limit at all.
func addrKey(seed maphash.Seed, addr netip.Addr) uint64 {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		addr = p.Addr()
	}
	b := addr.As16() // the zero Addr (unknown peer) becomes all zeros: one shared key
	return maphash.Bytes(seed, b[:])
}

// windowTable counts per key in fixed windows that start at a key's first count.
// Entries live in a slab of at most max slots, on one of two lists in the order they
// entered it: open keys (below their limit), which a full table evicts oldest first,
// and exhausted keys, which it never evicts. Every operation is O(1) but roomFor on a
// table full of exhausted keys; memory is bounded and steady-state use does not
// allocate.
type windowTable struct {
	max   int
	index map[uint64]int32
	slots []windowSlot
	// open and exhausted are the two lists; free chains unused slots. -1 is none.
	open, exhausted slotList
	free            int32
}

type slotList struct{ head, tail int32 }

type windowSlot struct {
	key        uint64
	start      time.Time
	count      int32
	exhausted  bool
	prev, next int32
}

func newWindowTable(max int) windowTable {
	return windowTable{max: max, index: make(map[uint64]int32),
		open: slotList{-1, -1}, exhausted: slotList{-1, -1}, free: -1}
}

func expired(start, now time.Time, window time.Duration) bool {
	// A clock that went backwards (no RTC, NTP catching up) must not lock anyone out
	// for longer than one window.
	d := now.Sub(start)
	return d >= window || d < 0
}

// count is what key has counted in its current window.
func (t *windowTable) count(key uint64, now time.Time, window time.Duration) int32 {
	i, ok := t.index[key]
	if !ok || expired(t.slots[i].start, now, window) {
		return 0
	}
	return t.slots[i].count
}

// retryAfter is how long key must wait, or 0 when it may try now.
func (t *windowTable) retryAfter(key uint64, now time.Time, limit int32, window time.Duration) time.Duration {
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

// roomFor is 0 when key is tracked or could be added, else how long until a key at
// its limit leaves a table that holds only such keys. Refusing then is stricter than
// any per-key limit, but evicting would release a key that is locked out.
func (t *windowTable) roomFor(key uint64, now time.Time, window time.Duration) time.Duration {
	if _, ok := t.index[key]; ok {
		return 0
	}
	t.sweep(now, window)
	if len(t.index) < t.max || t.open.head >= 0 {
		return 0
	}
	// Exhausted keys are listed in the order they reached their limit, not the order
	// their windows end: look for ended windows in the whole list. Each is dropped
	// once, and only a table under attack gets here.
	var soonest time.Duration = -1
	for i := t.exhausted.head; i >= 0; {
		s := &t.slots[i]
		next := s.next
		if expired(s.start, now, window) {
			t.remove(i)
		} else if left := s.start.Add(window).Sub(now); soonest < 0 || left < soonest {
			soonest = left
		}
		i = next
	}
	if len(t.index) < t.max {
		return 0
	}
	return soonest
}

// sweep drops ended windows from the heads of both lists; each is dropped once, so
// this is O(1) amortised.
func (t *windowTable) sweep(now time.Time, window time.Duration) {
	for _, l := range []*slotList{&t.open, &t.exhausted} {
		for l.head >= 0 && expired(t.slots[l.head].start, now, window) {
			t.remove(l.head)
		}
	}
}

// add counts one for key, opening a new window when its last one is over. A new key
// in a full table evicts the oldest open key; when there is none (roomFor said so
// before the attempt, but others may have filled the table since) the table grows by
// this key: at most by the attempts that were in flight.
func (t *windowTable) add(key uint64, now time.Time, window time.Duration, limit int32) {
	i, ok := t.index[key]
	if ok {
		s := &t.slots[i]
		if expired(s.start, now, window) {
			t.unlink(i)
			s.start, s.count, s.exhausted = now, 0, false
			t.pushTail(i)
		}
	} else {
		t.sweep(now, window)
		if len(t.index) >= t.max && t.open.head >= 0 {
			t.remove(t.open.head)
		}
		i = t.free
		if i >= 0 {
			t.free = t.slots[i].next
		} else {
			t.slots = append(t.slots, windowSlot{})
			i = int32(len(t.slots) - 1)
		}
		t.slots[i] = windowSlot{key: key, start: now}
		t.index[key] = i
		t.pushTail(i)
	}
	s := &t.slots[i]
	s.count++
	if s.count >= limit && !s.exhausted {
		t.unlink(i)
		s.exhausted = true
		t.pushTail(i)
	}
}

func (t *windowTable) remove(i int32) {
	t.unlink(i)
	delete(t.index, t.slots[i].key)
	t.slots[i] = windowSlot{next: t.free}
	t.free = i
}

func (t *windowTable) listOf(i int32) *slotList {
	if t.slots[i].exhausted {
		return &t.exhausted
	}
	return &t.open
}

func (t *windowTable) unlink(i int32) {
	l, s := t.listOf(i), &t.slots[i]
	if s.prev >= 0 {
		t.slots[s.prev].next = s.next
	} else {
		l.head = s.next
	}
	if s.next >= 0 {
		t.slots[s.next].prev = s.prev
	} else {
		l.tail = s.prev
	}
}

func (t *windowTable) pushTail(i int32) {
	l, s := t.listOf(i), &t.slots[i]
	s.prev, s.next = l.tail, -1
	if l.tail >= 0 {
		t.slots[l.tail].next = i
	} else {
		l.head = i
	}
	l.tail = i
}
