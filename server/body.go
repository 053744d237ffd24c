package server

import (
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Request bodies: read ahead of a request slot within a memory budget, and paced.

var (
	errBodiesBusy = &apiError{status: http.StatusServiceUnavailable, retryAfter: time.Second,
		detail: "the server is receiving too many request bodies at once; retry shortly"}
	errBodyEnded = badRequest("body", "the request body ended before its declared length")
	errBodyRead  = badRequest("body", "the request body could not be read")
)

// bufferBody reads the whole body (at most the route's limit, see limitBody) into
// memory before next runs, charging the body budget with what arrives; beyond the
// budget, or the client address's share of it, the answer is 503. The body's pace is
// bounded by limitBody's deadlines.
func (s *Server) bufferBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		c := bodyCharge{budget: s.cap.bodies, r: r, trustProxy: s.cfg.TrustProxy}
		body, err := c.read(r.Body, r.ContentLength)
		defer c.release()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		r.Body = io.NopCloser(&bodyReader{b: body})
		next.ServeHTTP(w, r)
	})
}

// bodyReader reads a buffered body; unlike bytes.Reader it allocates nothing more.
type bodyReader struct{ b []byte }

func (br *bodyReader) Read(p []byte) (int, error) {
	if len(br.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, br.b)
	br.b = br.b[n:]
	return n, nil
}

// bodyFreeBytes is the buffer every body starts in, which the budget does not count:
// the request's headers already cost more (up to --max-header-bytes), and the
// connection caps bound how many requests there are. So a request whose body does not
// come holds none of the budget, whatever length it declares, and small bodies (a
// login, a registration) never meet it.
const bodyFreeBytes = 1 << 10

// bodyBudget bounds the memory of bodies read ahead of a request slot: in all, and
// from one client address (an IPv6 /64), which gets only a share, so that bodies
// trickled from one address cannot take the whole. It is charged with buffers that
// grow as bytes arrive, never with a declared length.
type bodyBudget struct {
	max, perAddr int64

	mu     sync.Mutex
	used   atomic.Int64 // written under mu; read without it (metrics)
	byAddr map[netip.Addr]int64
}

func newBodyBudget(total, maxBody int64) *bodyBudget {
	// An address gets an eighth, as of the connections, but at least one body at the
	// limit.
	perAddr := min(total, max(total/8, maxBody+1))
	return &bodyBudget{max: total, perAddr: perAddr, byAddr: make(map[netip.Addr]int64)}
}

func (b *bodyBudget) take(addr netip.Addr, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used.Load()+n > b.max || b.byAddr[addr]+n > b.perAddr {
		return false
	}
	b.used.Add(n)
	b.byAddr[addr] += n
	return true
}

func (b *bodyBudget) give(addr netip.Addr, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used.Add(-n)
	if b.byAddr[addr] -= n; b.byAddr[addr] <= 0 {
		delete(b.byAddr, addr)
	}
}

// bodyCharge is what one request's body holds of the budget.
type bodyCharge struct {
	budget     *bodyBudget
	r          *http.Request
	trustProxy bool
	addr       netip.Addr // known once charged
	charged    int64
}

// read reads all of body into a buffer that starts at bodyFreeBytes (or the declared
// length, if smaller) and doubles whenever it is full and more is to come, charging
// the budget for each growth first: what is charged is at most twice what arrived.
// Call release once the buffer is unused.
func (c *bodyCharge) read(body io.Reader, declared int64) ([]byte, error) {
	size := int64(bodyFreeBytes)
	if declared >= 0 && declared < size {
		size = declared + 1 // +1: seeing EOF takes one more read
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			want := 2 * int64(cap(buf))
			if declared >= 0 && declared+1 > int64(cap(buf)) {
				want = min(want, declared+1)
			}
			if !c.grow(int64(cap(buf)), want) {
				return nil, errBodiesBusy
			}
			buf = slices.Grow(buf, int(want)-len(buf))
			buf = buf[:len(buf):want] // charge exactly what is used
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch err {
		case nil:
		case io.EOF: // a Reader's EOF is never wrapped
			return buf, nil
		default:
			return nil, bodyReadError(err)
		}
	}
}

// bodyReadError is what a client learns of a failed read of its body. (Apart from
// read, whose loop would otherwise allocate the targets of errors.As on every read.)
func bodyReadError(err error) error {
	var (
		big *http.MaxBytesError
		api *apiError
	)
	switch {
	case errors.As(err, &big), errors.As(err, &api): // 413, 408
		return err
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errBodyEnded
	}
	return errBodyRead // the connection broke: the client's doing, not a 500
}

// grow charges the growth of a buffer from capacity from to to, beyond bodyFreeBytes.
func (c *bodyCharge) grow(from, to int64) bool {
	n := max(0, to-bodyFreeBytes) - max(0, from-bodyFreeBytes)
	if n <= 0 {
		return true
	}
	if c.charged == 0 {
		c.addr = addrBlock(clientAddr(c.r, c.trustProxy))
	}
	if !c.budget.take(c.addr, n) {
		return false
	}
	c.charged += n
	return true
}

func (c *bodyCharge) release() {
	c.budget.give(c.addr, c.charged)
	c.charged = 0
}

// pacedBody moves the connection's read deadline while a body arrives: the body may
// take BodyTimeout plus one second for every BodyMinRate bytes received, but never
// longer than ReadTimeout from the start of the request (the http.Server's own
// deadline, restored once the body has been read). A client that sends more slowly is
// cut off with 408: it cannot hold a connection, or an upload slot, by trickling.
// Over HTTP/1.1 the connection limiter learns how the body comes (conn), so that at a
// cap a connection whose body is behind the pace gives way (connlimit.go).
type pacedBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	conn     *limitedConn // nil over HTTP/2 or without a limiter
	start    time.Time
	grace    time.Duration
	rate     int64
	limit    time.Time
	received int64
	ended    bool
}

func (s *Server) paceBody(w http.ResponseWriter, r *http.Request) {
	now := time.Now() // deadlines are wall-clock, so Config.Now is not used
	p := &pacedBody{ReadCloser: r.Body, rc: http.NewResponseController(w), start: now,
		grace: s.cfg.BodyTimeout, rate: s.cfg.BodyMinRate, limit: now.Add(s.cfg.ReadTimeout)}
	if p.rc.SetReadDeadline(p.deadline()) != nil {
		return // no connection underneath (tests through the handler): nothing to pace
	}
	if r.ProtoMajor == 1 {
		if p.conn = limitedConnOf(r); p.conn != nil {
			p.conn.bodyReceived.Store(0)
			p.conn.bodyStart.Store(max(1, int64(p.conn.l.clock()))) // 0 means no body
		}
	}
	r.Body = p
}

func (p *pacedBody) deadline() time.Time {
	d := p.start.Add(p.grace + time.Duration(float64(p.received)/float64(p.rate)*float64(time.Second)))
	if d.After(p.limit) {
		return p.limit
	}
	return d
}

func (p *pacedBody) Read(b []byte) (int, error) {
	if p.ended {
		return p.ReadCloser.Read(b)
	}
	if p.conn != nil {
		p.conn.bodyWaiting.Store(true)
	}
	n, err := p.ReadCloser.Read(b)
	p.received += int64(n)
	if p.conn != nil {
		p.conn.bodyWaiting.Store(false)
		p.conn.bodyReceived.Store(p.received)
	}
	if err != nil {
		p.ended = true
		if p.conn != nil {
			p.conn.bodyStart.Store(0)
		}
		// The body is done (or broken): back to the request's own deadline, which the
		// server's check for a vanished client then runs under.
		_ = p.rc.SetReadDeadline(p.limit) // fails only on a closed connection: nothing left to read
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return n, errSlowBody(p.grace, p.rate)
		}
		return n, err
	}
	_ = p.rc.SetReadDeadline(p.deadline()) // as above
	return n, nil
}

func errSlowBody(grace time.Duration, rate int64) error {
	return &apiError{status: http.StatusRequestTimeout,
		detail: "the request body arrived too slowly: it may take " + grace.String() + " plus one second per " + formatBytes(rate) + " received"}
}
