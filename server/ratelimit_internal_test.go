package server

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"testing"
	"time"
)

var limitEpoch = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)

// checkWindowTable verifies the links and the index agree, each list is in the order
// its keys entered it, and the size is within max.
func checkWindowTable(t *testing.T, wt *windowTable) {
	t.Helper()
	if len(wt.index) > wt.max || len(wt.slots) > wt.max {
		t.Fatalf("table holds %d keys in %d slots, max %d", len(wt.index), len(wt.slots), wt.max)
	}
	n := 0
	for _, l := range []struct {
		list      slotList
		exhausted bool
	}{{wt.open, false}, {wt.exhausted, true}} {
		prev := int32(-1)
		for i := l.list.head; i >= 0; i = wt.slots[i].next {
			s := wt.slots[i]
			if s.prev != prev {
				t.Fatalf("slot %d: prev %d, want %d", i, s.prev, prev)
			}
			if s.exhausted != l.exhausted {
				t.Fatalf("slot %d (exhausted=%v) on the wrong list", i, s.exhausted)
			}
			if !l.exhausted && prev >= 0 && s.start.Before(wt.slots[prev].start) {
				t.Fatalf("slot %d starts before its predecessor", i)
			}
			if j, ok := wt.index[s.key]; !ok || j != i {
				t.Fatalf("slot %d (key %d) not indexed", i, s.key)
			}
			prev = i
			n++
		}
		if prev != l.list.tail {
			t.Fatalf("list ends at %d, tail %d", prev, l.list.tail)
		}
	}
	if n != len(wt.index) {
		t.Fatalf("lists hold %d entries, index %d", n, len(wt.index))
	}
}

func TestWindowTableEvictsOldestOpen(t *testing.T) {
	wt := newWindowTable(3)
	now := limitEpoch
	for k := uint64(1); k <= 3; k++ {
		wt.add(k, now, time.Minute, 5)
		now = now.Add(time.Second)
	}
	wt.add(1, now, time.Minute, 5) // counting again does not make key 1 younger
	wt.add(4, now, time.Minute, 5)
	checkWindowTable(t, &wt)
	if _, ok := wt.index[1]; ok {
		t.Fatal("oldest key 1 survived eviction")
	}
	for _, k := range []uint64{2, 3, 4} {
		if _, ok := wt.index[k]; !ok {
			t.Fatalf("key %d evicted", k)
		}
	}
}

// The flush of issue 8: a key at its limit is never evicted, however many new keys
// arrive; when only such keys are left, new keys are refused until a window ends.
func TestWindowTableNeverEvictsExhaustedKeys(t *testing.T) {
	const limit = 3
	wt := newWindowTable(4)
	now := limitEpoch
	for range limit {
		wt.add(100, now, time.Minute, limit) // locked out first, so oldest
	}
	for k := range uint64(1000) {
		now = now.Add(time.Millisecond)
		if d := wt.roomFor(k, now, time.Minute); d != 0 {
			t.Fatalf("key %d refused with open keys to evict", k)
		}
		wt.add(k, now, time.Minute, limit)
	}
	checkWindowTable(t, &wt)
	if d := wt.retryAfter(100, now, limit, time.Minute); d != time.Minute-time.Second {
		t.Fatalf("locked key: retry after %v, want 59s (still locked)", d)
	}
	// Lock out the other three slots too: now nothing can be evicted.
	for k := uint64(200); k < 203; k++ {
		for range limit {
			if wt.roomFor(k, now, time.Minute) == 0 {
				wt.add(k, now, time.Minute, limit)
			}
		}
	}
	checkWindowTable(t, &wt)
	if len(wt.index) != 4 || wt.open.head >= 0 {
		t.Fatalf("table: %d keys, open list head %d; want 4 exhausted keys", len(wt.index), wt.open.head)
	}
	if d := wt.roomFor(999_999, now, time.Minute); d != time.Minute-time.Second {
		t.Fatalf("full of locked keys: room for a new one in %v, want 59s (key 100's window)", d)
	}
	// Once key 100's window is over there is room again.
	if d := wt.roomFor(999_999, limitEpoch.Add(time.Minute), time.Minute); d != 0 {
		t.Fatalf("after key 100's window: %v", d)
	}
	checkWindowTable(t, &wt)
}

func TestWindowTableForgetsExpiredWindows(t *testing.T) {
	wt := newWindowTable(100)
	for k := range uint64(50) {
		wt.add(k, limitEpoch, time.Minute, 1+int32(k%2)) // half of them exhausted
	}
	wt.add(1000, limitEpoch.Add(time.Minute), time.Minute, 5)
	checkWindowTable(t, &wt)
	if len(wt.index) != 1 {
		t.Fatalf("%d keys tracked after their windows ended, want only the new one", len(wt.index))
	}
	// Freed slots are reused rather than the slab growing.
	for k := range uint64(40) {
		wt.add(k, limitEpoch.Add(time.Minute), time.Minute, 5)
	}
	checkWindowTable(t, &wt)
	if len(wt.slots) != 50 {
		t.Fatalf("slab grew to %d slots, want the 50 already allocated", len(wt.slots))
	}
	// A key whose window ended starts a new one, open again.
	wt.add(1, limitEpoch.Add(2*time.Minute), time.Minute, 5)
	checkWindowTable(t, &wt)
	if c := wt.count(1, limitEpoch.Add(2*time.Minute), time.Minute); c != 1 {
		t.Fatalf("count %d in the new window, want 1", c)
	}
}

func TestWindowTableBackwardsClock(t *testing.T) {
	wt := newWindowTable(10)
	for range 5 {
		wt.add(7, limitEpoch, time.Minute, 5)
	}
	if d := wt.retryAfter(7, limitEpoch.Add(-time.Hour), 5, time.Minute); d != 0 {
		t.Fatalf("clock went back an hour: still locked for %v", d)
	}
	if d := wt.retryAfter(7, limitEpoch.Add(time.Second), 5, time.Minute); d != 59*time.Second {
		t.Fatalf("retry after %v, want 59s", d)
	}
}

// 100,000 distinct usernames, each failing from its own address (the worst case for
// memory): both tables stay at their cap and the heap does not grow with the keys.
func TestLoginLimitsMemoryBounded(t *testing.T) {
	const keys, max = 100_000, 10_000
	now := limitEpoch
	l := newLoginLimits(10, time.Minute, max, func() time.Time { return now })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keys {
		addr := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		// Long names cost nothing extra: only their hash is kept.
		a, err := l.begin(context.Background(), fmt.Sprintf("user-%d-%0200d", i, i), addr)
		if err != nil {
			t.Fatalf("key %d refused: %v", i, err)
		}
		a.settle(true)
		now = now.Add(time.Millisecond) // 100 s in all: windows end during the run too
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, d := range l.dims {
		checkWindowTable(t, &d.counts)
		if len(d.pending) != 0 {
			t.Fatalf("%d reservations left after every attempt settled", len(d.pending))
		}
	}
	// Two tables of 10,000 slots and map entries are well under 4 MiB; keeping the
	// usernames themselves would be over 20 MiB.
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew by %d KiB for %d keys", grew>>10, keys)
	if grew > 4<<20 {
		t.Fatalf("heap grew by %d bytes", grew)
	}
	runtime.KeepAlive(l)
}

func BenchmarkLoginLimits(b *testing.B) {
	ctx := context.Background()
	addr := netip.MustParseAddr("192.0.2.1")
	b.Run("same-key", func(b *testing.B) {
		now := limitEpoch
		l := newLoginLimits(1<<30, time.Minute, limitKeys, func() time.Time { return now })
		b.ReportAllocs()
		for b.Loop() {
			a, _ := l.begin(ctx, "alice", addr)
			a.settle(false)
		}
	})
	// Distinct keys with the tables full: every failure evicts the oldest entry of each.
	b.Run("evicting", func(b *testing.B) {
		now := limitEpoch
		l := newLoginLimits(10, time.Hour, limitKeys, func() time.Time { return now })
		names := make([]string, 4*limitKeys)
		addrs := make([]netip.Addr, len(names))
		for i := range names {
			names[i] = "user" + strconv.Itoa(i)
			addrs[i] = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			now = now.Add(time.Microsecond)
			a, _ := l.begin(ctx, names[i], addrs[i])
			a.settle(true)
			i++
			if i == len(names) {
				i = 0
			}
		}
	})
	b.Run("ipv6", func(b *testing.B) {
		now := limitEpoch
		l := newLoginLimits(1<<30, time.Minute, limitKeys, func() time.Time { return now })
		v6 := netip.MustParseAddr("2001:db8::1")
		b.ReportAllocs()
		for b.Loop() {
			a, _ := l.begin(ctx, "alice", v6)
			a.settle(true)
		}
	})
}

// Attempts beyond the room left beside those in flight wait for them to settle, at
// most as many per key as the limit; the rest are refused at once rather than hold
// request slots while they wait. Only settled failures count.
func TestAttemptLimitsWaitThenSettle(t *testing.T) {
	now := limitEpoch
	l := newAttemptLimits(func() time.Time { return now },
		newLimitDim(2, time.Minute, 100, limitMessages{exhausted: "exhausted", busy: "busy"}))
	waiting := make(chan struct{}, 8)
	l.waiting = func() { waiting <- struct{}{} }
	ctx := context.Background()
	inFlight := []reservation{}
	for range 2 {
		r, err := l.begin(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		inFlight = append(inFlight, r)
	}
	type result struct {
		r   reservation
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			r, err := l.begin(ctx, 7)
			results <- result{r, err}
		}()
		<-waiting
	}
	var api *apiError
	if _, err := l.begin(ctx, 7); !errors.As(err, &api) || api.detail != "busy" || api.retryAfter != busyRetry {
		t.Fatalf("a third waiter: %v, want busy", err)
	}
	other, err := l.begin(ctx, 8)
	if err != nil {
		t.Fatalf("another key is held up: %v", err)
	}
	other.settle(false)
	// A success leaves room: one waiter gets in (the other waits on).
	inFlight[0].settle(false)
	first := <-results
	if first.err != nil {
		t.Fatalf("waiter after a success: %v", first.err)
	}
	<-waiting // the other one waits again
	// Two failures use up the window: the last waiter is refused.
	inFlight[1].settle(true)
	<-waiting
	first.r.settle(true)
	if second := <-results; !errors.As(second.err, &api) || api.detail != "exhausted" {
		t.Fatalf("waiter after two failures: %v, want exhausted", second.err)
	}
	d := l.dims[0]
	if len(d.pending) != 0 || len(d.waiters) != 0 || d.counts.count(7, now, time.Minute) != 2 {
		t.Fatalf("left pending %v, waiters %v, count %d", d.pending, d.waiters, d.counts.count(7, now, time.Minute))
	}
}
