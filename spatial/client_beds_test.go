package spatial_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// TestBedsOrder: results come in input order, each as soon as it and the earlier ones
// are ready; a slow or failing bed holds the later ones back at most until its deadline.
func TestBedsOrder(t *testing.T) {
	// Generous: under the race detector, on a small machine shared with other test
	// runs, a call can stall for most of a second.
	const timeout = 3 * time.Second
	// Small beds: this test is about timing, and a few hundred calls at once under the
	// race detector on a small machine take long enough to blur it.
	ds := demo.Generate(demo.Options{Seed: 7, Beds: 5, Plants: 12})
	uuids := ds.ProjectUUIDs()
	tests := []struct {
		name     string
		slow     time.Duration // extra latency of bed 1
		failBed3 bool
		wantErr  map[int]error
		// Bed 1's result is due after about this long; the rest right after it.
		due time.Duration
	}{
		{"all fine", 0, false, nil, 0},
		{"slow within deadline", 400 * time.Millisecond, false, nil, 2 * 400 * time.Millisecond},
		{"slow beyond deadline", 20 * time.Second, false, map[int]error{1: spatial.ErrUnavailable}, timeout},
		{"failing bed", 0, true, map[int]error{3: spatial.ErrUnavailable}, 0},
		{"slow and failing", 400 * time.Millisecond, true, map[int]error{3: spatial.ErrUnavailable}, 2 * 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startDemo(t, ds, demo.ServerOptions{Latency: 10 * time.Millisecond})
			srv.SetProjectLatency(uuids[1], tt.slow)
			if tt.failBed3 {
				srv.FailProject(uuids[3], codes.Unavailable)
			}
			// Room for every call of every bed at once, so arrival times show the ordering
			// alone (with fewer slots the slow bed's calls also queue the others').
			c := dial(t, srv.Addr(), spatial.ClientConfig{CallTimeout: timeout, MaxInFlight: 1024})
			start := time.Now()
			var arrived []time.Duration
			next := 0
			for r := range c.Beds(context.Background(), uuids) {
				arrived = append(arrived, time.Since(start))
				if r.Index != next {
					t.Fatalf("got index %d, want %d", r.Index, next)
				}
				next++
				if want := tt.wantErr[r.Index]; want != nil {
					if !errors.Is(r.Err, want) {
						t.Errorf("bed %d: err %v, want %v", r.Index, r.Err, want)
					}
					continue
				}
				if r.Err != nil {
					t.Errorf("bed %d: %v", r.Index, r.Err)
					continue
				}
				if r.Bed.ProjectUUID != uuids[r.Index] || len(r.Bed.Plants) != len(ds.Beds[r.Index].Plants) {
					t.Errorf("bed %d: got %s with %d plants", r.Index, r.Bed.ProjectUUID, len(r.Bed.Plants))
				}
			}
			if next != len(uuids) {
				t.Fatalf("got %d results, want %d", next, len(uuids))
			}
			t.Logf("arrivals: %v", arrived)
			// Bed 0 needs what any bed needs on this machine (a few hundred calls at once
			// under the race detector take a while): the yardstick for the others.
			base := arrived[0]
			if tt.due == 0 {
				return
			}
			// Bed 1 is the slow one: bed 0 is not held back by it, bed 1 arrives when due
			// (not much later), and the rest, long ready, straight after it.
			if arrived[0] > arrived[1]-200*time.Millisecond {
				t.Errorf("bed 0 (%v) was held back by bed 1 (%v)", arrived[0], arrived[1])
			}
			// What matters is that bed 1 does not wait for its 20 s latency.
			if arrived[1] > tt.due+base+time.Second {
				t.Errorf("bed 1 arrived after %v, due after %v", arrived[1], tt.due)
			}
			if last := arrived[len(arrived)-1]; last-arrived[1] > 150*time.Millisecond {
				t.Errorf("last bed arrived %v after bed 1", last-arrived[1])
			}
		})
	}
}

// TestBedsCancel: cancelling ctx cancels the calls in flight (the server sees it),
// closes the channel promptly and leaves no goroutine behind.
func TestBedsCancel(t *testing.T) {
	ds := dataset(6)
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	// Connect and let the connection's own goroutines start before counting.
	if _, err := c.Bed(context.Background(), ds.Beds[0].ProjectUUID); err != nil {
		t.Fatal(err)
	}
	c.ResetCache()
	time.Sleep(20 * time.Millisecond)
	base := runtime.NumGoroutine()

	// Far longer than any wait below, so only the cancellation can end the calls.
	const latency = time.Minute
	srv.SetLatency(latency)
	srv.ResetStats()
	ctx, cancel := context.WithCancel(context.Background())
	ch := c.Beds(ctx, ds.ProjectUUIDs())
	eventually(t, "calls in flight", func() bool { return srv.Stats().InFlight == len(ds.Beds) })
	start := time.Now()
	cancel()
	n := 0
	for r := range ch {
		n++
		t.Logf("result after cancel: %d %v", r.Index, r.Err)
	}
	if d := time.Since(start); d > latency/4 {
		t.Errorf("channel closed %v after cancel", d)
	}
	eventually(t, "server to see the cancellations", func() bool {
		st := srv.Stats()
		return st.InFlight == 0 && st.Cancelled == int64(len(ds.Beds))
	})
	settleGoroutines(t, base)
	if st := c.Stats(); st.InFlight != 0 {
		t.Errorf("client still has %d calls in flight", st.InFlight)
	}
}

// TestBedsEmpty: no beds, a closed channel.
func TestBedsEmpty(t *testing.T) {
	c := dial(t, "127.0.0.1:1", spatial.ClientConfig{})
	for r := range c.Beds(context.Background(), nil) {
		t.Errorf("unexpected %+v", r)
	}
}

// TestServerDown: a server that is gone or does not answer costs at most CallTimeout.
func TestServerDown(t *testing.T) {
	const timeout = 300 * time.Millisecond
	refused := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	// silent accepts connections and never says a word: the call's deadline must end it.
	silent := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var conns []net.Conn
		go func() {
			defer close(done)
			for {
				conn, err := l.Accept()
				if err != nil {
					for _, c := range conns {
						c.Close()
					}
					return
				}
				conns = append(conns, conn)
			}
		}()
		t.Cleanup(func() { l.Close(); <-done })
		return l.Addr().String()
	}
	tests := []struct {
		name  string
		addr  func(*testing.T) string
		codes []codes.Code
	}{
		// The retry of a refused call may meet the channel reconnecting, and wait.
		{"connection refused", refused, []codes.Code{codes.Unavailable, codes.DeadlineExceeded}},
		{"no answer", silent, []codes.Code{codes.DeadlineExceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, tt.addr(t), spatial.ClientConfig{CallTimeout: timeout})
			start := time.Now()
			_, err := c.Bed(context.Background(), "some-project")
			took := time.Since(start)
			if !errors.Is(err, spatial.ErrUnavailable) || !slices.Contains(tt.codes, status.Code(err)) {
				t.Fatalf("err %v (code %v), want ErrUnavailable with %v", err, status.Code(err), tt.codes)
			}
			if took > timeout+700*time.Millisecond {
				t.Errorf("took %v, CallTimeout is %v", took, timeout)
			}
			t.Logf("%v after %v", err, took)
			c.Close()
		})
	}
}

// TestFailRate: injected Unavailable answers surface as ErrUnavailable (after the
// retry), and with retries most beds still come through correct.
func TestFailRate(t *testing.T) {
	const rounds = 4
	ds := demo.Generate(demo.Options{Seed: 7, Beds: 3, Plants: 12})
	tests := []struct {
		name      string
		rate      float64
		attempts  int
		wantAllOK bool
		wantNone  bool
	}{
		{"always failing", 1, 2, false, true},
		{"never failing", 0, 1, true, false},
		// 3% of ~30 calls: a bed fails more often than not without retries, and
		// rarely with them (a call fails twice with probability 0.0009).
		{"some failing, no retry", 0.03, 1, false, false},
		{"some failing, retried", 0.03, 2, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startDemo(t, ds, demo.ServerOptions{FailRate: tt.rate, Seed: 3})
			c := dial(t, srv.Addr(), spatial.ClientConfig{Attempts: tt.attempts, CacheTTL: spatial.CacheDisabled})
			ok, failed := 0, 0
			for round := 0; round < rounds; round++ {
				for r := range c.Beds(context.Background(), ds.ProjectUUIDs()) {
					if r.Err != nil {
						failed++
						if !errors.Is(r.Err, spatial.ErrUnavailable) || status.Code(r.Err) != codes.Unavailable {
							t.Errorf("bed %d: %v", r.Index, r.Err)
						}
						continue
					}
					ok++
					want, _ := ds.WantBed(r.Bed.ProjectUUID)
					if d := diffBed(r.Bed, want); d != "" {
						t.Errorf("bed %d: %s", r.Index, d)
					}
				}
			}
			st := srv.Stats()
			t.Logf("ok %d failed %d, injected %d", ok, failed, st.Injected)
			switch {
			case tt.wantNone && ok != 0, tt.wantAllOK && failed != 0:
				t.Errorf("ok %d failed %d", ok, failed)
			case tt.attempts == 1 && !tt.wantNone && !tt.wantAllOK && (failed == 0) != (st.Injected == 0):
				// Which calls draw a failure depends on scheduling, so how many beds fail
				// is random (all of them, at times); that each failure fails its bed is not.
				t.Errorf("without retries an injected failure fails its bed: ok %d failed %d, injected %d", ok, failed, st.Injected)
			case tt.attempts == 2 && tt.rate < 0.1 && failed > 3:
				// A bed fails about 3% of the time: four of twelve is all but impossible.
				t.Errorf("retries should save most beds: ok %d failed %d", ok, failed)
			}
			if tt.rate == 1 && st.Calls[mDetails] != int64(2*rounds*len(ds.Beds)) {
				t.Errorf("details calls %d, want two attempts per bed", st.Calls[mDetails])
			}
		})
	}
}

// TestBedFailsFast: the first real failure of a bed's second round ends the bed at
// once and cancels its other calls, on the server too, leaving no goroutine behind.
func TestBedFailsFast(t *testing.T) {
	ds := dataset(1)
	b := &ds.Beds[0]
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{CacheTTL: spatial.CacheDisabled})
	if _, err := c.Bed(context.Background(), b.ProjectUUID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	base := runtime.NumGoroutine()

	// Classes fail as soon as a hanging call has reached the server, so there is one
	// to cancel; everything but the details hangs for 20 s.
	hanging := make(chan struct{})
	var hangingOnce sync.Once
	srv.SetHook(func(method, _ string) (time.Duration, error) {
		switch method {
		case mDetails:
			return 0, nil
		case mClass:
			select {
			case <-hanging:
			case <-time.After(15 * time.Second):
			}
			return 0, status.Error(codes.Internal, "class table corrupt")
		}
		hangingOnce.Do(func() { close(hanging) })
		return 20 * time.Second, nil
	})
	defer srv.SetHook(nil)
	srv.ResetStats()
	start := time.Now()
	_, err := c.Bed(context.Background(), b.ProjectUUID)
	var ce *spatial.CallError
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "GetClass") || !errors.As(err, &ce) ||
		ce.Upstream() != "class table corrupt" || strings.Contains(err.Error(), "corrupt") || errors.Is(err, spatial.ErrUnavailable) {
		t.Fatalf("err %v, want the class failure (its cause for the log only)", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	// Every hanging call that reached the server is cancelled there (calls cancelled
	// before they were sent never reach it). A second class call may count too: it
	// fails, but its caller had already gone.
	eventually(t, "server to see the cancellations", func() bool {
		st := srv.Stats()
		return st.InFlight == 0 && st.Cancelled >= st.Calls[mMeasurement]+st.Calls[mInstance]+st.Calls[mTransform]
	})
	if st := srv.Stats(); st.Cancelled == 0 {
		t.Errorf("no call cancelled: %+v", st)
	}
	settleGoroutines(t, base)
}

// A garden of hundreds of beds is read a window of beds at a time, in order: not
// hundreds of goroutines and detail calls at once.
func TestBedsReadsAWindowOfBedsAtOnce(t *testing.T) {
	const window = 64
	srv := startDemo(t, dataset(1), demo.ServerOptions{})
	// The first calls wait until a whole window is on the server, so the window is
	// filled however the goroutines are scheduled; a wider one would show.
	srv.SetHook(holdUntil(window))
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	uuids := make([]string, 300)
	for i := range uuids {
		uuids[i] = fmt.Sprintf("made-up-%03d", i)
	}
	n := 0
	for r := range c.Beds(context.Background(), uuids) {
		if r.Index != n || !errors.Is(r.Err, spatial.ErrNotFound) {
			t.Fatalf("result %d: %+v", n, r)
		}
		n++
	}
	if n != len(uuids) {
		t.Fatalf("%d results", n)
	}
	if got := srv.Stats().MaxInFlight; got != window {
		t.Errorf("%d detail calls at once, want a window of %d", got, window)
	}
}
