package spatial

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestFlightCollapses(t *testing.T) {
	var g flightGroup
	var runs atomic.Int32
	release := make(chan struct{})
	fn := func(ctx context.Context) (any, error) {
		runs.Add(1)
		<-release
		return "v", nil
	}
	var wg sync.WaitGroup
	var joined atomic.Int32
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err, j := g.do(context.Background(), "k", fn)
			if v != "v" || err != nil {
				t.Errorf("got %v %v", v, err)
			}
			if j {
				joined.Add(1)
			}
		}()
	}
	// Let every caller join before the call ends.
	for deadline := time.Now().Add(15 * time.Second); ; {
		g.mu.Lock()
		n := 0
		if c := g.calls["k"]; c != nil {
			n = c.waiters
		}
		g.mu.Unlock()
		if n == 10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if runs.Load() != 1 || joined.Load() != 9 {
		t.Errorf("runs %d joined %d, want 1 and 9", runs.Load(), joined.Load())
	}
}

// TestFlightCancel: a caller that leaves does not cancel the call for the others; the
// last one to leave does.
func TestFlightCancel(t *testing.T) {
	var g flightGroup
	started := make(chan struct{})
	cancelled := make(chan struct{})
	release := make(chan struct{})
	fn := func(ctx context.Context) (any, error) {
		close(started)
		select {
		case <-ctx.Done():
			close(cancelled)
			return nil, ctx.Err()
		case <-release:
			return "v", nil
		}
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, err, _ := g.do(ctx1, "k", fn); errs <- err }()
	<-started
	go func() { _, err, _ := g.do(ctx2, "k", fn); errs <- err }()
	for deadline := time.Now().Add(15 * time.Second); ; {
		g.mu.Lock()
		n := g.calls["k"].waiters
		g.mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel1()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: %v", err)
	}
	select {
	case <-cancelled:
		t.Fatal("call cancelled while a caller still waits")
	case <-time.After(20 * time.Millisecond):
	}
	cancel2()
	<-errs
	select {
	case <-cancelled:
	case <-time.After(2 * time.Second):
		t.Fatal("call not cancelled after every caller left")
	}
	// A new caller starts afresh rather than joining the cancelled call.
	v, err, joined := g.do(context.Background(), "k", func(context.Context) (any, error) { return "fresh", nil })
	if v != "fresh" || err != nil || joined {
		t.Errorf("got %v %v joined=%v", v, err, joined)
	}
}
