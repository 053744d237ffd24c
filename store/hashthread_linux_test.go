package store

import (
	"runtime"
	"syscall"
	"testing"
)

func threadNice(t *testing.T) int {
	t.Helper()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	return 20 - raw
}

// Hashes run on a thread of lower priority than the caller's, and the caller's thread
// keeps its own.
func TestHashThreadPriority(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadNice(t)
	var inside int
	if err := onHashThread(lowerThreadPriority, func() { inside = threadNice(t) }); err != nil {
		t.Fatal(err)
	}
	if want := min(19, before+hashNice); inside != want {
		t.Fatalf("hash thread nice %d, want %d (caller %d)", inside, want, before)
	}
	if after := threadNice(t); after != before {
		t.Fatalf("caller's nice changed from %d to %d", before, after)
	}
}
