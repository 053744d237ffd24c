package spatial

import (
	"container/list"
	"context"
	"sync"
)

// slots hands out the client's MaxInFlight call slots fairly between shares (a share
// is a garden, see Caller). Calls that must wait queue per share, in their order of
// arrival, and each freed slot goes to the next share in turn, so a garden with
// thousands of beds holds back another garden's calls by about one call per waiting
// share, not by its whole queue. A share also holds at most perShare slots, so that a
// garden arriving while another holds every slot gets some at once instead of waiting
// for the other's calls to end.
type slots struct {
	mu       sync.Mutex
	free     int
	perShare int
	held     map[string]int
	queues   map[string]*shareQueue
	// ring lists the shares with waiters, in turn order; next is whose turn it is.
	ring []*shareQueue
	next int
}

type shareQueue struct {
	name    string
	waiters list.List // of *slotWaiter
}

type slotWaiter struct {
	ready   chan struct{}
	granted bool // under slots.mu
}

func newSlots(n int) *slots {
	// An eighth stays for the others: a cold 6 × 33 garden still gets its ~430
	// calls through in two waves at the default 256.
	per := n - n/8
	return &slots{free: n, perShare: per, held: map[string]int{}, queues: map[string]*shareQueue{}}
}

// acquire takes a slot for share, waiting until one is free or ctx ends.
func (s *slots) acquire(ctx context.Context, share string) error {
	s.mu.Lock()
	q := s.queues[share]
	if s.free > 0 && s.held[share] < s.perShare && q == nil {
		s.free--
		s.held[share]++
		s.mu.Unlock()
		return nil
	}
	if q == nil {
		q = &shareQueue{name: share}
		s.queues[share] = q
		s.ring = append(s.ring, q)
	}
	w := &slotWaiter{ready: make(chan struct{})}
	e := q.waiters.PushBack(w)
	s.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted {
		// Granted while giving up: pass the slot on.
		s.mu.Unlock()
		s.release(share)
		return ctx.Err()
	}
	q.waiters.Remove(e)
	if q.waiters.Len() == 0 {
		s.dropQueue(q)
	}
	s.mu.Unlock()
	return ctx.Err()
}

// release gives back a slot share held and hands free slots to waiting shares in turn.
func (s *slots) release(share string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[share]--; s.held[share] == 0 {
		delete(s.held, share)
	}
	s.free++
	// Each pass over the ring either grants a slot or finds every waiting share at
	// its cap.
	for s.free > 0 && len(s.ring) > 0 {
		granted := false
		for range len(s.ring) {
			if s.next >= len(s.ring) {
				s.next = 0
			}
			q := s.ring[s.next]
			if s.held[q.name] >= s.perShare {
				s.next++
				continue
			}
			w := q.waiters.Remove(q.waiters.Front()).(*slotWaiter)
			w.granted = true
			close(w.ready)
			s.free--
			s.held[q.name]++
			if q.waiters.Len() == 0 {
				s.dropQueue(q) // the next share moves into q's place in the ring
			} else {
				s.next++
			}
			granted = true
			break
		}
		if !granted {
			return
		}
	}
}

// dropQueue removes a share without waiters from the ring, keeping whose turn it is.
func (s *slots) dropQueue(q *shareQueue) {
	delete(s.queues, q.name)
	for i, r := range s.ring {
		if r == q {
			s.ring = append(s.ring[:i], s.ring[i+1:]...)
			if i < s.next {
				s.next--
			}
			return
		}
	}
}
