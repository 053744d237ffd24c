package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
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
// memory before next runs, charging it to the body budget; beyond the budget the
// answer is 503. The body's pace is bounded by limitBody's deadlines.
func (s *Server) bufferBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body, charged, err := s.cap.bodies.read(r.Body, r.ContentLength)
		defer s.cap.bodies.give(charged)
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

// bodyBudget bounds the memory of bodies read ahead of a request slot.
type bodyBudget struct {
	used atomic.Int64
	max  int64
}

func (b *bodyBudget) take(n int64) bool {
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *bodyBudget) give(n int64) { b.used.Add(-n) }

// read reads all of body, growing its buffer only after charging the budget for the
// growth. It returns what it charged, to be given back once the buffer is unused.
func (b *bodyBudget) read(body io.Reader, declared int64) (buf []byte, charged int64, err error) {
	const minBuf = 512
	for {
		if len(buf) == cap(buf) {
			want := max(minBuf, 2*cap(buf))
			if cap(buf) == 0 && declared >= 0 {
				want = int(declared) + 1 // +1: seeing EOF takes one more read
			}
			if !b.take(int64(want - cap(buf))) {
				return nil, charged, errBodiesBusy
			}
			charged += int64(want - cap(buf))
			buf = slices.Grow(buf, want-len(buf))
			buf = buf[:len(buf):want] // charge exactly what is used
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		var (
			big *http.MaxBytesError
			api *apiError
		)
		switch {
		case err == nil:
		case err == io.EOF:
			return buf, charged, nil
		case errors.As(err, &big), errors.As(err, &api): // 413, 408
			return nil, charged, err
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, charged, errBodyEnded
		default: // the connection broke: the client's doing, not a 500
			return nil, charged, errBodyRead
		}
	}
}

// pacedBody moves the connection's read deadline while a body arrives: the body may
// take BodyTimeout plus one second for every BodyMinRate bytes received, but never
// longer than ReadTimeout from the start of the request (the http.Server's own
// deadline, restored once the body has been read). A client that sends more slowly is
// cut off with 408: it cannot hold a connection, or an upload slot, by trickling.
type pacedBody struct {
	io.ReadCloser
	rc       *http.ResponseController
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
	n, err := p.ReadCloser.Read(b)
	p.received += int64(n)
	if err != nil {
		p.ended = true
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
