package server

import (
	"runtime"
	"testing"
	"time"
)

// TestHashingProcs: the hashes' Ps are added when hashing starts, stay while it goes
// on and through the linger, and go when the linger ends with no hash running; a hash
// that starts during the linger keeps them.
func TestHashingProcs(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(base)
	running := 0
	h := &hashingProcs{extra: 3, linger: time.Hour, running: func() int { return running }}
	procs := func(want int, when string) {
		t.Helper()
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", when, got, want)
		}
	}
	procs(base, "before any hash")
	running = 1
	h.changed()
	procs(base+3, "while hashing")
	running = 0
	h.changed()
	procs(base+3, "in the linger")
	running = 1
	h.changed()
	h.lower() // the linger's timer, fired late: a hash runs again
	procs(base+3, "hashing again within the linger")
	running = 0
	h.changed()
	h.lower() // the linger ends
	procs(base, "after the linger")
	h.lower()
	procs(base, "a second lower")
	running = 1
	h.changed()
	h.stop()
	procs(base, "after stop")
	h.changed()
	procs(base, "a hash reported after stop")
}
