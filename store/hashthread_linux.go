package store

import "syscall"

// lowerThreadPriority lowers the calling thread's scheduling priority by hashNice
// (nice values are per thread on Linux), so the kernel runs the threads that answer
// requests first when a flood of hashes keeps every core busy. Only lowering is
// allowed without privileges; a seccomp filter that refuses it leaves the priority
// as it was.
func lowerThreadPriority() {
	tid := syscall.Gettid()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return
	}
	nice := 20 - raw // the raw system call answers 20 - nice
	syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(19, nice+hashNice))
}
