package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// lineUp starts one acquire per entry, each joining the line before the next starts,
// and returns the order in which they are granted.
type lineUp struct {
	q       *hashQueue
	granted chan string
	queued  chan struct{}
}

func newLineUp(q *hashQueue) *lineUp {
	l := &lineUp{q: q, granted: make(chan string, 64), queued: make(chan struct{}, 64)}
	q.queued = func() { l.queued <- struct{}{} }
	return l
}

func (l *lineUp) join(ctx context.Context, name string, prio Priority, mem uint64) {
	go func() {
		if err := l.q.acquire(ctx, prio, mem); err != nil {
			l.granted <- name + ": " + err.Error()
			return
		}
		l.granted <- name
	}()
	<-l.queued
}

func (l *lineUp) next(t *testing.T) string {
	t.Helper()
	return <-l.granted
}

// Hashes are granted first come, first served, foreground before background; a
// registration queued first still waits behind logins that came later.
func TestHashQueueOrder(t *testing.T) {
	q := newHashQueue(1, 100)
	ctx := context.Background()
	if err := q.acquire(ctx, Foreground, 10); err != nil {
		t.Fatal(err)
	}
	l := newLineUp(q)
	l.join(ctx, "register-1", Background, 10)
	l.join(ctx, "login-1", Foreground, 10)
	l.join(ctx, "register-2", Background, 10)
	l.join(ctx, "login-2", Foreground, 10)
	l.join(ctx, "login-3", Foreground, 10)
	var order []string
	for range 5 {
		q.release(10)
		order = append(order, l.next(t))
	}
	if got, want := fmt.Sprint(order), "[login-1 login-2 login-3 register-1 register-2]"; got != want {
		t.Fatalf("granted %s, want %s", got, want)
	}
	q.release(10)
	if q.freeSlot != 1 || q.freeMem != 100 {
		t.Fatalf("after every release: %d slots, %d KiB free", q.freeSlot, q.freeMem)
	}
}

// Nobody overtakes the head of the line, not even a hash small enough to fit: the
// order stays first come, first served and a large hash is not starved.
func TestHashQueueHeadIsNotOvertaken(t *testing.T) {
	q := newHashQueue(3, 100)
	ctx := context.Background()
	if err := q.acquire(ctx, Foreground, 60); err != nil {
		t.Fatal(err)
	}
	l := newLineUp(q)
	l.join(ctx, "big", Foreground, 100)
	l.join(ctx, "small", Foreground, 10) // would fit beside the 60, but waits its turn
	q.release(60)
	if got := l.next(t); got != "big" {
		t.Fatalf("first granted %q, want big", got)
	}
	q.release(100)
	if got := l.next(t); got != "small" {
		t.Fatalf("then %q, want small", got)
	}
}

// A hash given up while it waits leaves the line; when it was the head, the ones
// behind it move up. A context already done takes nothing, even with room free.
func TestHashQueueCancel(t *testing.T) {
	q := newHashQueue(2, 100)
	bg := context.Background()
	if err := q.acquire(bg, Foreground, 90); err != nil {
		t.Fatal(err)
	}
	l := newLineUp(q)
	ctx, cancel := context.WithCancel(bg)
	l.join(ctx, "head", Foreground, 50)
	l.join(bg, "behind", Foreground, 10)
	cancel()
	// The head leaving grants "behind" at once, so the two goroutines report in
	// either order; "behind" fits only once the head has left the line.
	got := map[string]bool{l.next(t): true, l.next(t): true}
	if want := "head: " + context.Canceled.Error(); !got[want] || !got["behind"] {
		t.Fatalf("got %v, want %q and behind", got, want)
	}
	q.release(10)
	q.release(90)
	done, stop := context.WithCancel(bg)
	stop()
	if err := q.acquire(done, Foreground, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: %v", err)
	}
	if q.freeSlot != 2 || q.freeMem != 100 || q.lines[Foreground].Len() != 0 {
		t.Fatalf("left %d slots, %d KiB, %d waiting", q.freeSlot, q.freeMem, q.lines[Foreground].Len())
	}
}

// Under a storm of hashes of every size, some given up, the slots and the memory in
// use never exceed the budget, and everything is given back at the end.
func TestHashQueueBudgetHolds(t *testing.T) {
	const slots, memory = 3, 100
	q := newHashQueue(slots, memory)
	var mu sync.Mutex
	inUse, running := uint64(0), 0
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%7 == 0 {
				cancel()
			}
			mem := uint64(1 + i*37%memory)
			prio := Priority(i % 2)
			if q.acquire(ctx, prio, mem) != nil {
				return
			}
			mu.Lock()
			inUse += mem
			running++
			if inUse > memory || running > slots {
				t.Errorf("%d hashes hold %d KiB: over the budget of %d and %d", running, inUse, slots, memory)
			}
			mu.Unlock()
			// Unlocked in between: others may take their turn while this one holds.
			mu.Lock()
			inUse -= mem
			running--
			mu.Unlock()
			q.release(mem)
		})
	}
	wg.Wait()
	if q.freeSlot != slots || q.freeMem != memory {
		t.Fatalf("left %d slots and %d KiB free", q.freeSlot, q.freeMem)
	}
}

// A stored hash asking for more memory than all slots together may use is refused
// before anything is allocated; a default hash always fits, even beside cheaper
// parameters.
func TestVerifyRefusesHashOverBudget(t *testing.T) {
	cheap := Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}
	p := NewPasswords(cheap, 2)
	if want := uint64(2 * SlotMemory); p.MemoryBudget() != want {
		t.Fatalf("budget %d bytes, want %d", p.MemoryBudget(), want)
	}
	// 1 GiB: within Verify's sanity bounds, over the 128 MiB budget.
	huge := "$argon2id$v=19$m=1048576,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U"
	if ok, err := p.Verify(context.Background(), huge, "garden-secret"); ok || !errors.Is(err, ErrHashBudget) {
		t.Fatalf("Verify of a 1 GiB hash with a 128 MiB budget: %v, %v", ok, err)
	}
	if p.queue.freeSlot != 2 || p.queue.freeMem != p.queue.memory {
		t.Fatal("a refused hash kept part of the budget")
	}
	// Hashes gardend wrote before (64 MiB, two lanes) and writes now verify with one
	// slot, with cheap parameters configured.
	one := NewPasswords(cheap, 1)
	for _, par := range []Argon2Params{{Time: 1, Memory: 64 * 1024, Threads: 2, KeyLen: 32}, DefaultArgon2} {
		h, err := NewPasswords(par, 1).Hash(context.Background(), "garden-secret")
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := one.Verify(context.Background(), h, "garden-secret"); !ok || err != nil {
			t.Fatalf("hash with %+v: %v, %v", par, ok, err)
		}
	}
}
