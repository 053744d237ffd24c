package store

import (
	"fmt"
	"syscall"
)

// lowerThreadPriority lowers the calling thread's scheduling priority by hashNice
// (nice values are per thread on Linux), so the kernel runs the threads that answer
// requests first when a flood of hashes keeps every core busy. Only lowering is
// allowed without privileges; a seccomp filter that refuses setpriority (systemd's
// SystemCallFilter=~@resources) leaves the priority as it was, and the error says so.
func lowerThreadPriority() error {
	tid := syscall.Gettid()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return fmt.Errorf("getpriority: %w", err)
	}
	nice := 20 - raw // the raw system call answers 20 - nice
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(19, nice+hashNice)); err != nil {
		return fmt.Errorf("setpriority: %w", err)
	}
	return nil
}
