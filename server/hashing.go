package server

import (
	"runtime"
	"runtime/debug"

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

// ReserveHashingProcs raises GOMAXPROCS by maxHashing and returns what undoes it. Each
// hash holds a P while it runs on its low-priority thread: without Ps of their own,
// a flood of hashes would leave requests waiting for the Go scheduler to preempt one
// (up to 10 ms at a time) however low the kernel ranks those threads. For the process
// that serves (gardend serve); tests leave GOMAXPROCS alone.
func ReserveHashingProcs(maxHashing int) (restore func()) {
	prev := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(prev + maxHashing)
	return func() { runtime.GOMAXPROCS(prev) }
}

// SetMemoryLimit sets the Go runtime's soft memory limit (bytes) and returns what
// undoes it: the garbage collector then works harder as the heap nears the limit,
// instead of letting the garbage of finished hashes double the heap.
func SetMemoryLimit(limit int64) (restore func()) {
	prev := debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}
