//go:build linux

package tiles_test

import (
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gardend/gardend/server/tiles"
)

// TestFullDiskLeavesNothing: a build whose writes the file system refuses (EFBIG
// under a lowered RLIMIT_FSIZE, standing for a full disk: the same failed write)
// leaves no file behind — no pack, no temporary, no failure record, for the picture
// is not to blame — is retried with backoff, and builds once there is room. Not
// parallel: the limit is the process's.
func TestFullDiskLeavesNothing(t *testing.T) {
	now := time.Now()
	var clock atomic.Int64
	m, src, dir := newManager(t, tiles.Config{Backoff: time.Millisecond, MaxAttempts: 3, RetryAfter: time.Hour,
		Now: func() time.Time { return now.Add(time.Duration(clock.Load())) }})
	p := picture(t, src, 1, 600, 450) // its pack is some 100 KiB

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	small := lim
	small.Cur = 16 << 10 // Go ignores SIGXFSZ: a larger write fails with EFBIG
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)

	run(t, m)
	m.Want(p)
	deadline := time.Now().Add(time.Minute)
	for st := state(t, m, p); st.State != tiles.Failed; st = state(t, m, p) {
		if st.State == tiles.Ready {
			t.Fatal("built with no room for the pack")
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %+v with no room", st)
		}
		clock.Add(int64(time.Second)) // past any backoff
		time.Sleep(5 * time.Millisecond)
	}
	if st := state(t, m, p); !strings.Contains(st.Err, "failed repeatedly") || strings.Contains(st.Err, "too large") {
		t.Fatalf("status %+v: a passing failure, told without the system's words", st)
	}
	if left := names(t, dir); len(left) != 0 {
		t.Fatalf("left behind after failed builds: %v", left)
	}

	restore()
	clock.Add(int64(2 * time.Hour)) // past RetryAfter: the next reader queues it again
	if st := state(t, m, p); st.State != tiles.Queued {
		t.Fatalf("after RetryAfter: %+v", st)
	}
	idle(t, m)
	if st := state(t, m, p); st.State != tiles.Ready {
		t.Fatalf("with room again: %+v", st)
	}
	if left := names(t, dir); len(left) != 1 || !strings.HasSuffix(left[0], ".pyr") {
		t.Fatalf("files: %v", left)
	}
}
