package server

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// TestSharedCheckRunsOnce: while a check hangs (a stuck disk), further callers join
// that run instead of starting others, and each returns when its own deadline ends;
// after the run, the next caller starts a fresh one.
func TestSharedCheckRunsOnce(t *testing.T) {
	var runs atomic.Int32
	started, release := make(chan struct{}, 1), make(chan struct{})
	errHung := errors.New("disk hung")
	check := shared(func() error {
		runs.Add(1)
		started <- struct{}{}
		<-release
		return errHung
	})
	first := make(chan error, 1)
	go func() { first <- check(context.Background()) }()
	<-started
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		if err := check(gone); !errors.Is(err, context.Canceled) {
			t.Fatalf("caller past its deadline: %v", err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d runs while one hung", n)
	}
	close(release)
	if err := <-first; !errors.Is(err, errHung) {
		t.Fatalf("result %v", err)
	}
	// The run is over once its caller has its result; the next call runs again.
	if err := check(context.Background()); !errors.Is(err, errHung) || runs.Load() != 2 {
		t.Fatalf("a later call: %v after %d runs", err, runs.Load())
	}
}
