package server

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gardend/gardend/store"
)

// DefaultMaxHashing is one hash at once per core the process may use: more only share
// the cores and each takes longer (BenchmarkLoginFlood measures it).
func DefaultMaxHashing() int { return runtime.GOMAXPROCS(0) }

// HashingMemory is the most memory, in bytes, that maxHashing hashes with the argon2
// parameters hold at once: the hard cap the hashing line keeps.
func HashingMemory(argon store.Argon2Params, maxHashing int) int64 {
	return int64(store.HashingBudget(argon, maxHashing))
}

// memoryHeadroom is what the default memory limit leaves beside the hashing budget:
// the heap of a busy server without its hashes is far below it.
const memoryHeadroom = 128 << 20

// DefaultMemoryLimit is the Go memory limit gardend serve sets unless told otherwise:
// the hashing budget plus headroom (256 MiB with two cores).
func DefaultMemoryLimit(argon store.Argon2Params, maxHashing int) int64 {
	return HashingMemory(argon, maxHashing) + memoryHeadroom
}

// hashingProcs raises GOMAXPROCS by the hashing slots while password hashes run
// (Config.HashingProcs). Each hash holds a P while it runs on its low-priority thread:
// without Ps of their own, a flood of hashes would leave requests waiting for the Go
// scheduler to preempt one (up to 10 ms at a time) however low the kernel ranks those
// threads. But Ps beyond the cores cost every request when no hash runs: idle Ps spin
// looking for work and the scheduler hands goroutines between more threads than
// cores (on 2 cores, GET /companies took 30% more CPU per request with 4 Ps than with
// 2). So the Ps are there only while hashes run, and a while after (linger), so that
// a burst of logins does not stop the world twice per hash.
type hashingProcs struct {
	extra   int
	linger  time.Duration
	running func() int // hashes in progress

	mu      sync.Mutex
	prev    int // GOMAXPROCS before raising; 0 while not raised
	timer   *time.Timer
	stopped bool
}

// hashingProcsLinger is how long the Ps stay after the last hash ended.
const hashingProcsLinger = 2 * time.Second

// changed is the Passwords.OnHashing hook: hashing started or stopped.
func (h *hashingProcs) changed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	if h.running() > 0 {
		if h.timer != nil {
			h.timer.Stop()
		}
		if h.prev == 0 {
			h.prev = runtime.GOMAXPROCS(0)
			runtime.GOMAXPROCS(h.prev + h.extra)
		}
		return
	}
	if h.prev == 0 {
		return
	}
	if h.timer == nil {
		h.timer = time.AfterFunc(h.linger, h.lower)
	} else {
		h.timer.Reset(h.linger)
	}
}

// lower gives the Ps back unless hashing started again.
func (h *hashingProcs) lower() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.prev == 0 || h.running() > 0 {
		return
	}
	runtime.GOMAXPROCS(h.prev)
	h.prev = 0
}

// stop gives the Ps back for good (the server stops).
func (h *hashingProcs) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
	}
	if h.prev != 0 {
		runtime.GOMAXPROCS(h.prev)
		h.prev = 0
	}
}

// SetMemoryLimit sets the Go runtime's soft memory limit (bytes) and returns what
// undoes it: the garbage collector then works harder as the heap nears the limit,
// instead of letting the garbage of finished hashes double the heap.
func SetMemoryLimit(limit int64) (restore func()) {
	prev := debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}
