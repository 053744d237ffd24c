package spatial_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// reconnectOutage is long enough for gRPC's own backoff (1 s × 1.6ⁿ, uncapped before
// 120 s) to leave gaps of 4, 6.5 and 10.5 s between attempts, where ours stays at 3 s:
// the test's limit can then leave a busy machine's timers a wide margin (1.5 s; 0.5 s
// failed under CI's load with gaps of 4.3 and 4.6 s) and still fail on gRPC's own.
const reconnectOutage = 20 * time.Second

// After an outage of the spatial server, the client connects again within the
// backoff cap (DefaultReconnectMaxDelay, plus 20 % jitter) of the server being back,
// and no two connection attempts during the outage are further apart than that.
// Before the cap, gaps grew to 4, 6.5 and 10.5 s within these 20 s (36 s seen after
// longer outages, 120 s at most). Runs for about 21 s, in parallel with the other tests.
func TestReconnectAfterAnOutageWithinTheBackoffCap(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s outage; skipped with -short")
	}
	t.Parallel()
	ds := dataset(1)
	project := ds.Beds[0].ProjectUUID
	srv := demo.NewServer(ds, demo.ServerOptions{})
	addr, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Every call of the outage fails and is logged; this test only counts.
	c, err := spatial.Dial(spatial.ClientConfig{Addr: addr, CacheTTL: spatial.CacheDisabled, CallTimeout: time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Bed(context.Background(), project); err != nil {
		t.Fatal(err)
	}

	// The outage: the server goes, and something on its port accepts connections and
	// drops them at once, recording when gardend tried.
	srv.Stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("take over the port: %v", err)
	}
	var mu sync.Mutex
	var attempts []time.Time
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			attempts = append(attempts, time.Now())
			mu.Unlock()
			conn.Close()
		}
	}()
	// Requests keep coming during the outage, as they would from users.
	ctx, stopCalls := context.WithCancel(context.Background())
	var calls sync.WaitGroup
	calls.Go(func() {
		for ctx.Err() == nil {
			c.Bed(ctx, project)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	time.Sleep(reconnectOutage)
	ln.Close()
	back := demo.NewServer(ds, demo.ServerOptions{})
	if _, err := back.Start(addr); err != nil {
		t.Fatalf("restart on %s: %v", addr, err)
	}
	t.Cleanup(back.Stop)
	restarted := time.Now()
	stopCalls()
	calls.Wait()

	limit := spatial.DefaultReconnectMaxDelay*6/5 + 1500*time.Millisecond
	var recovery time.Duration
	for {
		_, err := c.Bed(context.Background(), project)
		if err == nil {
			recovery = time.Since(restarted)
			break
		}
		if time.Since(restarted) > 2*limit {
			t.Fatalf("no answer %v after the server came back: %v", time.Since(restarted), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// The connection to the server back counts as the last attempt (it was made at
	// most one polling interval before the answer).
	attempts = append(attempts, restarted.Add(recovery))
	var maxGap time.Duration
	for i := 1; i < len(attempts); i++ {
		maxGap = max(maxGap, attempts[i].Sub(attempts[i-1]))
	}
	t.Logf("outage %v: %d connection attempts, longest gap %v; answered again %v after the server came back",
		reconnectOutage, len(attempts), maxGap.Round(time.Millisecond), recovery.Round(time.Millisecond))
	if len(attempts) < 4 {
		t.Fatalf("only %d connection attempts during a %v outage", len(attempts), reconnectOutage)
	}
	if maxGap > limit {
		t.Errorf("attempts up to %v apart, want at most %v", maxGap, limit)
	}
	if recovery > limit {
		t.Errorf("answered again %v after the server came back, want at most %v", recovery, limit)
	}
}
