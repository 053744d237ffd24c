package store

import (
	"container/list"
	"context"
	"sync"
)

// hashQueue hands out hashing slots and memory (KiB) in arrival order within each
// priority, foreground first. The head of the line is never overtaken: when it does
// not fit yet, everyone behind it waits too, so a large hash cannot starve and the
// order is exactly first come, first served.
type hashQueue struct {
	slots  int
	memory uint64

	mu       sync.Mutex
	freeSlot int
	freeMem  uint64
	lines    [Background + 1]list.List // of *hashWaiter

	// queued, when set by a test, runs once a hash has joined the line.
	queued func()
	// busy: a slot was taken when the lock was last released; onBusy is told, after
	// the lock is released, each time that changes (Passwords.OnHashing).
	busy   bool
	onBusy func()
}

type hashWaiter struct {
	mem     uint64
	granted chan struct{}
}

func newHashQueue(slots int, memory uint64) *hashQueue {
	return &hashQueue{slots: slots, memory: memory, freeSlot: slots, freeMem: memory}
}

func (q *hashQueue) acquire(ctx context.Context, prio Priority, mem uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	if q.nobodyAhead(prio) && q.fits(mem) {
		q.take(mem)
		q.unlock()
		return nil
	}
	w := &hashWaiter{mem: mem, granted: make(chan struct{})}
	e := q.lines[prio].PushBack(w)
	q.mu.Unlock()
	if q.queued != nil {
		q.queued()
	}

	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	select {
	case <-w.granted:
		// Granted while giving up: hand it on.
		q.put(mem)
	default:
		q.lines[prio].Remove(e)
	}
	q.grant() // the head may have left, letting the next one in
	q.unlock()
	return ctx.Err()
}

func (q *hashQueue) release(mem uint64) {
	q.mu.Lock()
	q.put(mem)
	q.grant()
	q.unlock()
}

// unlock releases q.mu after slots were taken or given back, and tells onBusy when
// that started or ended hashing. Two such calls may overlap, so onBusy reads the
// state again (counts) rather than trusting the order of calls.
func (q *hashQueue) unlock() {
	busy := q.freeSlot < q.slots
	changed := busy != q.busy
	q.busy = busy
	q.mu.Unlock()
	if changed && q.onBusy != nil {
		q.onBusy()
	}
}

// nobodyAhead: no one of the same or a higher priority waits.
func (q *hashQueue) nobodyAhead(prio Priority) bool {
	for p := Foreground; p <= prio; p++ {
		if q.lines[p].Len() > 0 {
			return false
		}
	}
	return true
}

func (q *hashQueue) fits(mem uint64) bool { return q.freeSlot > 0 && q.freeMem >= mem }
func (q *hashQueue) take(mem uint64)      { q.freeSlot--; q.freeMem -= mem }
func (q *hashQueue) put(mem uint64)       { q.freeSlot++; q.freeMem += mem }

// grant lets in waiters from the head of the line while they fit.
func (q *hashQueue) grant() {
	for p := range q.lines {
		for e := q.lines[p].Front(); e != nil; e = q.lines[p].Front() {
			w := e.Value.(*hashWaiter)
			if !q.fits(w.mem) {
				return
			}
			q.take(w.mem)
			q.lines[p].Remove(e)
			close(w.granted)
		}
	}
}

// counts reports the hashes running and those waiting in line (metrics).
func (q *hashQueue) counts() (running, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for p := range q.lines {
		waiting += q.lines[p].Len()
	}
	return q.slots - q.freeSlot, waiting
}
