package server

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// evictNewAfter: a connection that has not finished its first request's headers
// within this long may be closed to make room (a slow header writer, or a client that
// connected and went quiet). A younger one is still in a handshake and is left alone.
const evictNewAfter = time.Second

// connLimiter caps the open connections of a listener: MaxConns in all and
// MaxConnsPerAddr from one client address. At a cap, a new connection takes the place
// of the longest-idle keep-alive connection (or of the oldest one still without a
// whole request) under the same cap, which net/http clients reopen transparently; if
// every connection there is busy with a request, the new one is closed at once. So
// idle and half-open connections cannot keep anyone out.
//
// Connections still reading their first request's headers are the costly ones (a
// 60 KiB header block costs about 150 KiB while net/http parses it), so at most a
// quarter of MaxConns may be in that state: beyond it the oldest of them gives way,
// whatever its age. Legitimate headers arrive in milliseconds; only a flood of
// unfinished ones lives long enough to be the oldest.
//
// A connection whose request waits on a body that has fallen behind bodyRate (after
// the same grace as unfinished headers) gives way at a cap like an idle one: else
// requests that declare a body and send nothing would fill the caps for
// --body-timeout at a time, at no bandwidth (HTTP/1.1; an HTTP/2 connection carries
// other requests beside it).
type connLimiter struct {
	net.Listener
	max, perAddr int // perAddr 0: no per-address cap
	maxFresh     int // connections without a whole first request
	log          zerolog.Logger
	newGrace     time.Duration // evictNewAfter; tests shorten it
	bodyRate     int64         // --body-min-rate; 0: bodies never make a connection give way

	mu     sync.Mutex
	open   map[*limitedConn]struct{}
	byAddr map[netip.Addr]int
	fresh  int // open connections in http.StateNew
	// streams are the HTTP/2 streams in handlers (takeStream), at most max.
	streams int

	refused, evicted atomic.Uint64
	lastWarn         atomic.Int64 // clock() of the last warning

	// epoch: the limiter's times are time.Since(epoch) (clock), which reads only the
	// monotonic clock, once a request; time.Now reads the wall clock too.
	epoch time.Time
}

func newConnLimiter(ln net.Listener, maxConns, perAddr int, log zerolog.Logger) *connLimiter {
	l := &connLimiter{Listener: ln, max: maxConns, perAddr: perAddr, maxFresh: min(maxConns, max(8, maxConns/4)),
		log: log, newGrace: evictNewAfter, epoch: time.Now(),
		open: make(map[*limitedConn]struct{}), byAddr: make(map[netip.Addr]int)}
	l.lastWarn.Store(-int64(time.Minute)) // the first warning goes out at once
	return l
}

// clock is the time since the limiter was made, from the monotonic clock.
func (l *connLimiter) clock() time.Duration { return time.Since(l.epoch) }

// limitedConn is an accepted connection, with the HTTP state net/http reports.
type limitedConn struct {
	net.Conn
	l     *connLimiter
	addr  netip.Addr
	state atomic.Int32 // http.ConnState
	since atomic.Int64 // clock() of the last state change that matters (track)
	once  sync.Once
	// bodyStart is when the current request began to read its body (the limiter's
	// clock, at least 1; 0 when none is being read), bodyReceived what it has received,
	// bodyWaiting whether a read of it waits now (not a handler at work): pacedBody
	// keeps them, track clears bodyStart at every state change.
	bodyStart, bodyReceived atomic.Int64
	bodyWaiting             atomic.Bool
}

// bodyBehind reports whether c's request waits on its body, has been reading it for
// longer than grace and received less than rate bytes a second since then; and since
// when.
func (c *limitedConn) bodyBehind(now time.Duration, grace time.Duration, rate int64) (start int64, behind bool) {
	start = c.bodyStart.Load()
	if start == 0 || rate <= 0 || !c.bodyWaiting.Load() {
		return 0, false
	}
	late := now - time.Duration(start) - grace
	return start, late > 0 && float64(c.bodyReceived.Load()) < late.Seconds()*float64(rate)
}

// connKey keys the accepted connection in a request's context (ConnContext).
type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// limitedConnOf is the limited connection r came on, or nil.
func limitedConnOf(r *http.Request) *limitedConn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		c = nc.NetConn()
	}
	lc, _ := c.(*limitedConn)
	return lc
}

// Accept returns the next connection the caps admit.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

func (l *connLimiter) admit(c net.Conn) *limitedConn {
	now := l.clock()
	lc := &limitedConn{Conn: c, l: l, addr: connAddr(c.RemoteAddr())}
	lc.state.Store(int32(http.StateNew))
	lc.since.Store(int64(now))

	l.mu.Lock()
	var victims [2]*limitedConn
	n := 0
	full := false
	switch {
	case l.perAddr > 0 && l.byAddr[lc.addr] >= l.perAddr:
		victims[n], full = l.idlest(now, lc.addr, l.newGrace), true
	case len(l.open) >= l.max:
		victims[n], full = l.idlest(now, netip.Addr{}, l.newGrace), true
	}
	if full && victims[n] == nil {
		l.mu.Unlock()
		l.refused.Add(1) // before the close, which the client may observe at once
		_ = c.Close()
		l.warn(now, "refused")
		return nil
	}
	if victims[n] != nil {
		l.forget(victims[n])
		n++
	}
	if l.fresh >= l.maxFresh {
		if v := l.idlest(now, netip.Addr{}, -1); v != nil {
			l.forget(v)
			victims[n] = v
			n++
		}
	}
	l.open[lc] = struct{}{}
	l.byAddr[lc.addr]++
	l.fresh++
	l.mu.Unlock()
	for _, v := range victims[:n] {
		_ = v.Conn.Close() // its own Close finds it forgotten; the server sees the error
		l.evicted.Add(1)
		l.warn(now, "closed an idle or unfinished connection for")
	}
	return lc
}

// idlest picks the connection to give way: idle the longest, or without a whole
// request, or with a request whose body is behind the pace, for longer than grace;
// only from addr unless it is the zero Addr. With a negative grace it picks only
// among those without a whole request, the oldest.
func (l *connLimiter) idlest(now time.Duration, addr netip.Addr, grace time.Duration) *limitedConn {
	var best *limitedConn
	var bestSince int64
	for c := range l.open {
		if addr.IsValid() && c.addr != addr {
			continue
		}
		since := c.since.Load()
		switch http.ConnState(c.state.Load()) {
		case http.StateIdle:
			if grace < 0 {
				continue
			}
		case http.StateNew:
			if grace > 0 && now-time.Duration(since) < grace {
				continue
			}
		case http.StateActive:
			start, behind := c.bodyBehind(now, grace, l.bodyRate)
			if grace < 0 || !behind {
				continue
			}
			since = start
		default:
			continue
		}
		if best == nil || since < bestSince {
			best, bestSince = c, since
		}
	}
	return best
}

// forget stops counting c; l.mu is held.
func (l *connLimiter) forget(c *limitedConn) {
	if _, ok := l.open[c]; !ok {
		return
	}
	delete(l.open, c)
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
	if http.ConnState(c.state.Swap(int32(http.StateClosed))) == http.StateNew {
		l.fresh--
	}
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.forget(c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// track is the http.Server's ConnState hook.
func (l *connLimiter) track(c net.Conn, st http.ConnState) {
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		c = nc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok || st == http.StateNew { // admit set the state and its time
		return
	}
	lc.bodyStart.Store(0) // a request's body is read in StateActive, after this
	// since matters for idle connections (the idlest gives way) and new ones (admit
	// set it); a busy one is picked only by its body's pace (bodyStart), so its time
	// is not read.
	if st == http.StateIdle {
		lc.since.Store(int64(l.clock()))
	}
	// Each request makes two changes (active, idle): between those, no lock. Only
	// leaving StateNew changes the count of fresh connections, under l.mu, so that it
	// and forget count once between them; forget marks a connection StateClosed.
	for {
		old := http.ConnState(lc.state.Load())
		switch old {
		case http.StateClosed:
			return
		case http.StateNew:
			l.mu.Lock()
			if _, counted := l.open[lc]; counted && http.ConnState(lc.state.Swap(int32(st))) == http.StateNew {
				l.fresh--
			}
			l.mu.Unlock()
			return
		}
		if lc.state.CompareAndSwap(int32(old), int32(st)) {
			return
		}
	}
}

// takeStream counts an HTTP/2 stream of c entering a handler as a connection of c's
// address, and as one of at most max streams in handlers in all, unless either is at
// its cap. Over HTTP/1.1 a connection runs at most one handler; without this, one
// HTTP/2 connection could hold every request slot, and many connections 16 times as
// many handlers as the connection caps allow, each with its buffers (a download that
// gave its request slot back and whose client reads nothing holds them up to
// --write-timeout). The error is the 503 to answer.
func (l *connLimiter) takeStream(c *limitedConn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.perAddr > 0 && l.byAddr[c.addr] >= l.perAddr:
		return errAddrBusy
	case l.streams >= l.max:
		return errBusy
	}
	l.byAddr[c.addr]++
	l.streams++
	return nil
}

func (l *connLimiter) giveStream(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.streams--
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
}

// saturated reports the open connections and the HTTP/2 streams in handlers, and
// whether a new request would be refused: a new connection (the cap reached, none
// idle), or a new HTTP/2 stream (as many in handlers as the cap, takeStream).
func (l *connLimiter) saturated() (open, streams int, full bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	open, streams = len(l.open), l.streams
	full = open >= l.max && l.idlest(l.clock(), netip.Addr{}, l.newGrace) == nil || streams >= l.max
	return open, streams, full
}

// warn logs that a cap was reached, at most once a minute, with the totals so far.
func (l *connLimiter) warn(now time.Duration, what string) {
	last := l.lastWarn.Load()
	if int64(now)-last < int64(time.Minute) || !l.lastWarn.CompareAndSwap(last, int64(now)) {
		return
	}
	l.log.Warn().Int("max_conns", l.max).Int("max_conns_per_addr", l.perAddr).
		Uint64("refused_total", l.refused.Load()).Uint64("evicted_total", l.evicted.Load()).
		Msg("connection cap reached: " + what + " a new connection")
}

// connAddr is the key a connection counts under: its IP address, or the /64 of an
// IPv6 one, as one host usually holds a whole /64.
func connAddr(a net.Addr) netip.Addr {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.IPv4Unspecified() // not TCP (a test's pipe): one shared key
	}
	return addrBlock(tcp.AddrPort().Addr())
}
