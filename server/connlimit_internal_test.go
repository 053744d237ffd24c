package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// limitedServer serves h on a loopback listener behind a connLimiter.
func limitedServer(t *testing.T, max, perAddr int, h http.Handler, edit ...func(*connLimiter)) (*connLimiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := newConnLimiter(ln, max, perAddr, zerolog.Nop())
	lim.newGrace = 50 * time.Millisecond
	for _, e := range edit {
		e(lim)
	}
	hs := &http.Server{Handler: h, ConnState: lim.track, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(lim)
	t.Cleanup(func() { hs.Close() })
	return lim, ln.Addr().String()
}

// keepAlive opens a connection, completes one request on it and leaves it idle.
func keepAlive(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReader(c)
	if err := roundTrip(c, br, "/"); err != nil {
		t.Fatalf("first request: %v", err)
	}
	return c, br
}

// roundTrip sends GET path on c and reads the answer.
func roundTrip(c net.Conn, br *bufio.Reader, path string) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return errors.New(res.Status)
	}
	return nil
}

// closedByServer reports whether the server has closed c (reads hit EOF or a reset)
// within 10 s (only a failure waits that long); stillOpen whether it has not within
// 100 ms.
func closedByServer(c net.Conn) bool { return closedWithin(c, 10*time.Second) }

func stillOpen(c net.Conn) bool { return !closedWithin(c, 100*time.Millisecond) }

func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// unfinishedHeaders opens n connections that start a request and never end its
// header block.
func unfinishedHeaders(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET / HTTP/1.1\r\nX-Pad: "+strings.Repeat("a", 1000))
		conns = append(conns, c)
	}
	return conns
}

// waitIdle waits until the limiter has seen n connections go idle.
func waitIdle(t *testing.T, lim *connLimiter, n int) {
	t.Helper()
	waitConns(t, lim, n, "idle", func(c *limitedConn) bool { return http.ConnState(c.state.Load()) == http.StateIdle })
}

// waitConns waits until at least n of the limiter's connections match.
func waitConns(t *testing.T, lim *connLimiter, n int, what string, match func(*limitedConn) bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		found := 0
		lim.mu.Lock()
		for c := range lim.open {
			if match(c) {
				found++
			}
		}
		lim.mu.Unlock()
		if found >= n {
			return
		}
	}
	t.Fatalf("fewer than %d %s connections", n, what)
}

func TestConnLimitIdleGiveWay(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	lim, addr := limitedServer(t, 3, 0, ok)
	var conns []net.Conn
	for i := range 3 {
		c, _ := keepAlive(t, addr)
		conns = append(conns, c)
		waitIdle(t, lim, i+1) // idle in this order
	}
	// A fourth client gets in; the longest-idle connection gives way.
	c4, br4 := keepAlive(t, addr)
	if !closedByServer(conns[0]) {
		t.Fatal("the longest-idle connection was not closed")
	}
	if err := roundTrip(c4, br4, "/"); err != nil {
		t.Fatalf("the new connection: %v", err)
	}
	if open, _, _ := lim.saturated(); open != 3 {
		t.Fatalf("%d connections counted, want 3", open)
	}
	if lim.evicted.Load() != 1 || lim.refused.Load() != 0 {
		t.Fatalf("evicted %d, refused %d", lim.evicted.Load(), lim.refused.Load())
	}
}

func TestConnLimitRefusesWhenAllBusy(t *testing.T) {
	entered, release := make(chan struct{}, 4), make(chan struct{})
	busy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	})
	lim, addr := limitedServer(t, 2, 0, busy)
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		<-entered
	}
	if _, _, full := lim.saturated(); !full {
		t.Fatal("two busy connections at a cap of two: not saturated")
	}
	c3, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if !closedByServer(c3) {
		t.Fatal("a third connection was kept while both were busy")
	}
	if lim.refused.Load() != 1 {
		t.Fatalf("refused %d", lim.refused.Load())
	}
	close(release)
}

func TestConnLimitPerAddress(t *testing.T) {
	entered, release := make(chan struct{}, 8), make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			entered <- struct{}{}
			<-release
		}
	})
	lim, addr := limitedServer(t, 100, 2, h)
	idle, _ := keepAlive(t, addr)
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	io.WriteString(busy, "GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	waitIdle(t, lim, 1)
	// At this address's cap: the idle one gives way, then nothing can.
	c3, _ := keepAlive(t, addr)
	if !closedByServer(idle) {
		t.Fatal("the address's idle connection was not closed")
	}
	io.WriteString(c3, "GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	c4, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	if !closedByServer(c4) {
		t.Fatal("a third connection from one address was kept")
	}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if lim.byAddr[netip.MustParseAddr("127.0.0.1")] != 2 {
		t.Fatalf("counted per address: %v", lim.byAddr)
	}
}

// TestConnLimitSlowHeaders: connections that never finish their headers give way to
// new ones after the grace period, so they cannot fill the table between header
// timeouts.
func TestConnLimitSlowHeaders(t *testing.T) {
	lim, addr := limitedServer(t, 2, 0, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	slow := unfinishedHeaders(t, addr, 2)
	// Their grace runs from when the limiter accepted them, which a loaded machine
	// may do late: wait for that, then let the grace pass.
	waitConns(t, lim, 2, "accepted", func(*limitedConn) bool { return true })
	time.Sleep(2 * lim.newGrace)
	c, br := keepAlive(t, addr)
	if err := roundTrip(c, br, "/"); err != nil {
		t.Fatal(err)
	}
	if !closedByServer(slow[0]) {
		t.Fatal("the oldest unfinished header block was not closed")
	}
}

func TestConnAddr(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:1234":              "192.0.2.7",
		"[::ffff:192.0.2.7]:1":        "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":  "2001:db8:1:2::",
		"[2001:db8:1:2:ffff::1]:8000": "2001:db8:1:2::",
	} {
		a, _ := net.ResolveTCPAddr("tcp", in)
		if got := connAddr(a).String(); got != want {
			t.Errorf("connAddr(%s) = %s, want %s", in, got, want)
		}
	}
	if !connAddr(&net.UnixAddr{Name: "x"}).IsValid() {
		t.Error("a non-TCP address has no key")
	}
}

// TestConnLimitUnfinishedShare: connections still sending their first headers may
// hold only their share of the table; beyond it the oldest gives way at once, however
// young, while idle connections stay.
func TestConnLimitUnfinishedShare(t *testing.T) {
	lim, addr := limitedServer(t, 100, 0, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		func(l *connLimiter) { l.maxFresh = 2 })
	idle, _ := keepAlive(t, addr)
	waitIdle(t, lim, 1)
	slow := unfinishedHeaders(t, addr, 3)
	if !closedByServer(slow[0]) {
		t.Fatal("a third unfinished header block did not push out the first")
	}
	for _, c := range append(slow[1:], idle) {
		if !stillOpen(c) {
			t.Fatal("a connection within its share was closed")
		}
	}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if lim.fresh != 2 || len(lim.open) != 3 {
		t.Fatalf("%d unfinished of %d open, want 2 of 3", lim.fresh, len(lim.open))
	}
}

// BenchmarkConnTrack is what the limiter costs each request: two state changes of a
// kept-alive connection (active, idle), from every core at once.
func BenchmarkConnTrack(b *testing.B) {
	lim := newConnLimiter(nil, 1<<20, 0, zerolog.Nop())
	b.RunParallel(func(pb *testing.PB) {
		a, peer := net.Pipe()
		defer a.Close()
		defer peer.Close()
		lc := lim.admit(a)
		lim.track(lc, http.StateNew)
		for pb.Next() {
			lim.track(lc, http.StateActive)
			lim.track(lc, http.StateIdle)
		}
	})
}

// TestConnLimitWarnsOncePerMinute: the first warning goes out at once, however soon
// after start; more within the minute do not.
func TestConnLimitWarnsOncePerMinute(t *testing.T) {
	var logs bytes.Buffer
	l := newConnLimiter(nil, 1, 0, zerolog.New(&logs))
	l.warn(l.clock(), "refused")
	l.warn(l.clock(), "refused")
	if n := strings.Count(logs.String(), "connection cap reached"); n != 1 {
		t.Fatalf("%d warnings: %s", n, logs.String())
	}
	l.warn(l.clock()+time.Minute, "refused")
	if n := strings.Count(logs.String(), "connection cap reached"); n != 2 {
		t.Fatalf("%d warnings a minute later: %s", n, logs.String())
	}
}

// TestSaturatedCountsStreams: with as many HTTP/2 streams in handlers as the cap,
// every new stream is refused (takeStream), and the readiness check says so though
// few connections are open (issue 15: it looked at connections only).
func TestSaturatedCountsStreams(t *testing.T) {
	lim, _ := limitedServer(t, 2, 0, http.NotFoundHandler())
	c := &limitedConn{l: lim, addr: netip.MustParseAddr("127.0.0.1")}
	for range 2 {
		if err := lim.takeStream(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := lim.takeStream(c); err == nil {
		t.Fatal("a third stream at a cap of two was let in")
	}
	if open, streams, full := lim.saturated(); open != 0 || streams != 2 || !full {
		t.Fatalf("saturated() = %d open, %d streams, full %v; want 0, 2, true", open, streams, full)
	}
	lim.giveStream(c)
	if _, _, full := lim.saturated(); full {
		t.Fatal("saturated with a stream free")
	}
}
