package server

import (
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"testing"
	"time"
)

var limitEpoch = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)

// checkFailTable verifies the links and the index agree and the size is within max.
func checkFailTable(t *testing.T, ft *failTable) {
	t.Helper()
	if len(ft.index) > ft.max || len(ft.slots) > ft.max {
		t.Fatalf("table holds %d keys in %d slots, max %d", len(ft.index), len(ft.slots), ft.max)
	}
	n, prev := 0, int32(-1)
	for i := ft.head; i >= 0; i = ft.slots[i].next {
		s := ft.slots[i]
		if s.prev != prev {
			t.Fatalf("slot %d: prev %d, want %d", i, s.prev, prev)
		}
		if prev >= 0 && s.start.Before(ft.slots[prev].start) {
			t.Fatalf("slot %d starts before its predecessor", i)
		}
		if j, ok := ft.index[s.key]; !ok || j != i {
			t.Fatalf("slot %d (key %d) not indexed", i, s.key)
		}
		prev = i
		n++
	}
	if prev != ft.tail || n != len(ft.index) {
		t.Fatalf("list has %d entries ending at %d; index %d, tail %d", n, prev, len(ft.index), ft.tail)
	}
}

func TestFailTableEvictsOldest(t *testing.T) {
	ft := newFailTable(3)
	now := limitEpoch
	for k := uint64(1); k <= 3; k++ {
		ft.add(k, now, time.Minute)
		now = now.Add(time.Second)
	}
	ft.add(1, now, time.Minute) // counting again does not make key 1 younger
	ft.add(4, now, time.Minute)
	checkFailTable(t, &ft)
	if _, ok := ft.index[1]; ok {
		t.Fatal("oldest key 1 survived eviction")
	}
	for _, k := range []uint64{2, 3, 4} {
		if _, ok := ft.index[k]; !ok {
			t.Fatalf("key %d evicted", k)
		}
	}
}

func TestFailTableForgetsExpiredWindows(t *testing.T) {
	ft := newFailTable(100)
	for k := range uint64(50) {
		ft.add(k, limitEpoch, time.Minute)
	}
	ft.add(1000, limitEpoch.Add(time.Minute), time.Minute)
	checkFailTable(t, &ft)
	if len(ft.index) != 1 {
		t.Fatalf("%d keys tracked after their windows ended, want only the new one", len(ft.index))
	}
	// Freed slots are reused rather than the slab growing.
	for k := range uint64(40) {
		ft.add(k, limitEpoch.Add(time.Minute), time.Minute)
	}
	checkFailTable(t, &ft)
	if len(ft.slots) != 50 {
		t.Fatalf("slab grew to %d slots, want the 50 already allocated", len(ft.slots))
	}
}

// Successful logins give their attempt back; an entry with nothing left is dropped so
// successes never crowd failing keys out of the table.
func TestFailTableRefund(t *testing.T) {
	ft := newFailTable(10)
	ft.add(1, limitEpoch, time.Minute)
	ft.add(1, limitEpoch, time.Minute)
	ft.add(2, limitEpoch, time.Minute)
	ft.refund(2)
	ft.refund(1)
	ft.refund(3) // not tracked: nothing happens
	checkFailTable(t, &ft)
	if _, ok := ft.index[2]; ok {
		t.Fatal("key 2 kept with no failures left")
	}
	if i, ok := ft.index[1]; !ok || ft.slots[i].count != 1 {
		t.Fatal("key 1 should keep one failure")
	}
}

func TestFailTableBackwardsClock(t *testing.T) {
	ft := newFailTable(10)
	for range 5 {
		ft.add(7, limitEpoch, time.Minute)
	}
	if d := ft.retryAfter(7, limitEpoch.Add(-time.Hour), 5, time.Minute); d != 0 {
		t.Fatalf("clock went back an hour: still locked for %v", d)
	}
	if d := ft.retryAfter(7, limitEpoch.Add(time.Second), 5, time.Minute); d != 59*time.Second {
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
		if _, err := l.begin(fmt.Sprintf("user-%d-%0200d", i, i), addr); err != nil {
			t.Fatalf("key %d refused: %v", i, err)
		}
		now = now.Add(time.Millisecond) // 100 s in all: windows end during the run too
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	for name, ft := range map[string]*failTable{"users": &l.users, "addrs": &l.addrs} {
		checkFailTable(t, ft)
		if len(ft.index) > max {
			t.Fatalf("%s: %d keys tracked, cap %d", name, len(ft.index), max)
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
	addr := netip.MustParseAddr("192.0.2.1")
	b.Run("same-key", func(b *testing.B) {
		now := limitEpoch
		l := newLoginLimits(1<<30, time.Minute, loginLimitKeys, func() time.Time { return now })
		b.ReportAllocs()
		for b.Loop() {
			a, _ := l.begin("alice", addr)
			a.succeeded()
		}
	})
	// Distinct keys with the tables full: every begin evicts the oldest entry of each.
	b.Run("evicting", func(b *testing.B) {
		now := limitEpoch
		l := newLoginLimits(10, time.Hour, loginLimitKeys, func() time.Time { return now })
		names := make([]string, 4*loginLimitKeys)
		addrs := make([]netip.Addr, len(names))
		for i := range names {
			names[i] = "user" + strconv.Itoa(i)
			addrs[i] = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			now = now.Add(time.Microsecond)
			l.begin(names[i], addrs[i])
			i++
			if i == len(names) {
				i = 0
			}
		}
	})
	b.Run("ipv6", func(b *testing.B) {
		now := limitEpoch
		l := newLoginLimits(1<<30, time.Minute, loginLimitKeys, func() time.Time { return now })
		v6 := netip.MustParseAddr("2001:db8::1")
		b.ReportAllocs()
		for b.Loop() {
			l.begin("alice", v6)
		}
	})
}
