package spatial

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// waiting is how many calls of share wait for a slot.
func (s *slots) waiting(share string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[share]; q != nil {
		return q.waiters.Len()
	}
	return 0
}

// queue starts an acquire for share and returns once it waits; the channel reports
// when it got its slot.
func queue(t *testing.T, s *slots, share string) <-chan error {
	t.Helper()
	before := s.waiting(share)
	got := make(chan error, 1)
	go func() { got <- s.acquire(context.Background(), share) }()
	for s.waiting(share) == before {
		select {
		case err := <-got:
			t.Fatalf("%s got a slot at once: %v", share, err)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	return got
}

// gets waits for the acquire behind ch to return with its slot.
func gets(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no slot", what)
	}
}

// expectWaiting checks who still waits (under the lock: no timing involved).
func expectWaiting(t *testing.T, s *slots, what string, want map[string]int) {
	t.Helper()
	for share, n := range want {
		if got := s.waiting(share); got != n {
			t.Fatalf("%s: %d of %s waiting, want %d", what, got, share, n)
		}
	}
}

// A garden that arrives behind a long queue of another's calls gets every other freed
// slot, not the slots after the whole queue.
func TestSlotsTakeTurnsBetweenShares(t *testing.T) {
	s := newSlots(2)
	for range 2 {
		if err := s.acquire(context.Background(), "huge"); err != nil {
			t.Fatal(err)
		}
	}
	var huge []<-chan error
	for range 5 {
		huge = append(huge, queue(t, s, "huge"))
	}
	small := []<-chan error{queue(t, s, "small"), queue(t, s, "small")}

	s.release("huge") // huge's turn: its first waiter
	expectWaiting(t, s, "first freed slot", map[string]int{"huge": 4, "small": 2})
	gets(t, huge[0], "huge's first")
	s.release("huge") // small's turn
	expectWaiting(t, s, "second freed slot", map[string]int{"huge": 4, "small": 1})
	gets(t, small[0], "small's first")
	s.release("huge")
	expectWaiting(t, s, "third freed slot", map[string]int{"huge": 3, "small": 1})
	gets(t, huge[1], "huge's second")
	s.release("small")
	expectWaiting(t, s, "fourth freed slot", map[string]int{"huge": 3, "small": 0})
	gets(t, small[1], "small's second")
	for i, ch := range huge[2:] {
		s.release("huge")
		gets(t, ch, fmt.Sprint("huge's waiter ", i+2))
	}
}

// One share never holds every slot: a newcomer gets one at once.
func TestSlotsKeepSomeForOtherShares(t *testing.T) {
	s := newSlots(16) // a share holds at most 14
	for range 14 {
		if err := s.acquire(context.Background(), "huge"); err != nil {
			t.Fatal(err)
		}
	}
	blocked := queue(t, s, "huge")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.acquire(ctx, "small"); err != nil {
		t.Fatalf("a newcomer waited for a slot: %v", err)
	}
	s.release("small")
	expectWaiting(t, s, "a slot free, huge at its cap", map[string]int{"huge": 1})
	s.release("huge")
	expectWaiting(t, s, "huge gave one back", map[string]int{"huge": 0})
	gets(t, blocked, "huge's waiter")
}

func TestSlotsGivingUpLeavesNoTrace(t *testing.T) {
	s := newSlots(1)
	if err := s.acquire(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- s.acquire(ctx, "b") }()
	for s.waiting("b") == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	next := queue(t, s, "c")
	s.release("a")
	gets(t, next, "the caller after the one that gave up")
	s.release("c")
	if s.free != 1 || len(s.held) != 0 || len(s.ring) != 0 || len(s.queues) != 0 {
		t.Fatalf("left %+v", s)
	}
}

// Under contention from many shares no share goes over its cap, the total never over
// the slots, and every slot comes back.
func TestSlotsUnderContention(t *testing.T) {
	const n = 16
	s := newSlots(n)
	var mu sync.Mutex
	held := map[string]int{}
	total := 0
	var wg sync.WaitGroup
	for g := range 64 {
		share := []string{"a", "b", "c", ""}[g%4]
		wg.Go(func() {
			for i := range 200 {
				ctx := context.Background()
				if i%7 == 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Microsecond)
					defer cancel()
				}
				if s.acquire(ctx, share) != nil {
					continue
				}
				mu.Lock()
				held[share]++
				total++
				if held[share] > s.perShare || total > n {
					t.Errorf("share %q holds %d, all %d", share, held[share], total)
				}
				mu.Unlock()
				mu.Lock()
				held[share]--
				total--
				mu.Unlock()
				s.release(share)
			}
		})
	}
	wg.Wait()
	if s.free != n || len(s.held) != 0 || len(s.ring) != 0 || len(s.queues) != 0 {
		t.Fatalf("left free %d, held %v, ring %d, queues %d", s.free, s.held, len(s.ring), len(s.queues))
	}
}
