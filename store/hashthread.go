package store

import "runtime"

// hashNice is how much lower than the rest of the process hashes run.
const hashNice = 10

// onHashThread runs fn on an OS thread of its own with a lower priority and waits for
// it. The thread is never handed back to the Go scheduler: it ends with its
// goroutine, taking the lowered priority with it (raising it again would need
// privileges). A new thread per hash costs microseconds beside a hash's tens of
// milliseconds.
func onHashThread(fn func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		lowerThreadPriority()
		fn()
		close(done)
	}()
	<-done
}
