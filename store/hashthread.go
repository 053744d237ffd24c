package store

import "runtime"

// hashNice is how much lower than the rest of the process hashes run.
const hashNice = 10

// onHashThread runs fn on an OS thread of its own, after lowering that thread's
// priority with lower, and waits for it. The thread is never handed back to the Go
// scheduler: it ends with its goroutine, taking the lowered priority with it (raising
// it again would need privileges). A new thread per hash costs microseconds beside a
// hash's tens of milliseconds. fn runs whether or not the priority could be lowered;
// lower's error is returned.
func onHashThread(lower func() error, fn func()) error {
	done := make(chan struct{})
	var err error
	go func() {
		runtime.LockOSThread()
		err = lower()
		fn()
		close(done)
	}()
	<-done
	return err
}
