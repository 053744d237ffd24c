package server

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gardend/gardend/server/metrics"
)

// slotClass says which scarce resource a route takes while its handler runs.
type slotClass int

const (
	// slotRequest: the body is read first (bufferBody), then the handler runs in one
	// of MaxConcurrent request slots.
	slotRequest slotClass = iota
	// slotNone: /healthz and /readyz must answer whatever the load; the web app and
	// the OpenAPI document are bytes in memory, with nothing to bound but the pace of
	// a client, who must not hold a slot by reading them slowly (or not at all).
	slotNone
	// slotUpload: the handler streams its body to disk in one of MaxUploads upload
	// slots, which it takes itself once it knows the caller may upload.
	slotUpload
)

// capacity holds the server's request and upload slots and the budget of request
// bodies read ahead of a slot.
type capacity struct {
	slots chan struct{}
	// writeGrace is slotWriteGrace; tests shorten it.
	writeGrace time.Duration
	uploads    *uploadSlots
	bodies     *bodyBudget
}

func newCapacity(cfg *Config) *capacity {
	return &capacity{
		slots:      make(chan struct{}, cfg.MaxConcurrent),
		writeGrace: slotWriteGrace,
		uploads:    newUploadSlots(cfg.MaxUploads, cfg.BodyMinRate),
		bodies:     newBodyBudget(cfg.BodyBufferBytes, cfg.MaxBodyBytes),
	}
}

var (
	errBusy = &apiError{status: http.StatusServiceUnavailable, retryAfter: time.Second,
		detail: "the server is at its limit of concurrent requests; retry shortly"}
	errAddrBusy = &apiError{status: http.StatusServiceUnavailable, retryAfter: time.Second,
		detail: "too many requests from this address at once; retry shortly"}
)

// requestSlot runs next in a request slot, or answers 503 at once when all are taken:
// queueing would only turn overload into timeouts and memory growth. The body has been
// read by then (bufferBody), so a slow client never holds a slot while it sends. Nor
// while it does not read: a write (or flush) of the answer that waits on the client
// longer than slotWriteGrace gives the slot back, and the handler takes one again,
// waiting its turn, only once the client has taken the bytes (slotWriter). The
// slots thus bound the handlers at work; what waits on clients is bounded by the
// connections (--max-conns, and per address), over HTTP/2 each stream in a handler
// counting as a connection of its address (connLimiter.takeStream).
func (s *Server) requestSlot(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			if lc := limitedConnOf(r); lc != nil {
				if err := lc.l.takeStream(lc); err != nil {
					s.writeError(w, r, err)
					return
				}
				defer lc.l.giveStream(lc)
			}
		}
		select {
		case s.cap.slots <- struct{}{}:
		default:
			s.writeError(w, r, errBusy)
			return
		}
		h := &slotHold{slots: s.cap.slots}
		h.held.Store(true)
		defer h.give()
		if ri := infoOf(r); ri != nil {
			ri.slot = h
		}
		next.ServeHTTP(&slotWriter{ResponseWriter: w, hold: h, ctx: r.Context(), grace: s.cap.writeGrace}, r)
	})
}

// slotWriteGrace is how long a write of an answer may wait on its client before the
// request gives its slot back.
const slotWriteGrace = time.Second

// slotHold is a request's hold on a request slot.
type slotHold struct {
	slots chan struct{}
	held  atomic.Bool // a slot is taken now
	done  atomic.Bool // given back for good (releaseSlot): never taken again
}

// give gives the slot back if one is held.
func (h *slotHold) give() {
	if h.held.CompareAndSwap(true, false) {
		<-h.slots
	}
}

// retake waits for a slot again, unless the request gave its slot up for good.
func (h *slotHold) retake(ctx context.Context) error {
	if h.done.Load() {
		return nil
	}
	select {
	case h.slots <- struct{}{}:
		h.held.Store(true)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// slotWriter is the writer of a handler in a request slot: a write or a flush that
// waits on the client longer than grace gives the slot back meanwhile.
type slotWriter struct {
	http.ResponseWriter
	hold  *slotHold
	ctx   context.Context
	grace time.Duration
}

// waiting runs send, during which the slot goes back once grace has passed; then,
// if it did, it waits for a slot again.
func (w *slotWriter) waiting(send func() error) error {
	if !w.hold.held.Load() {
		return send()
	}
	gave := make(chan struct{})
	t := time.AfterFunc(w.grace, func() {
		w.hold.give()
		close(gave)
	})
	err := send()
	if t.Stop() {
		return err
	}
	<-gave // give has run: the slot is back
	if err != nil {
		return err
	}
	return w.hold.retake(w.ctx)
}

func (w *slotWriter) Write(p []byte) (n int, err error) {
	err = w.waiting(func() (err error) {
		n, err = w.ResponseWriter.Write(p)
		return err
	})
	return n, err
}

// FlushError is what http.ResponseController.Flush calls.
func (w *slotWriter) FlushError() error {
	return w.waiting(http.NewResponseController(w.ResponseWriter).Flush)
}

func (w *slotWriter) Flush() { _ = w.FlushError() }

func (w *slotWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// releaseSlot gives the request's slot back before the handler ends, when all that is
// left is sending a response whose pace the client sets (an image download): a slow
// reader then holds its connection, not a slot.
func (s *Server) releaseSlot(r *http.Request) {
	if ri := infoOf(r); ri != nil && ri.slot != nil {
		ri.slot.done.Store(true)
		ri.slot.give()
	}
}

// capacityFigures is what each limit holds now, for the metrics (the public /readyz
// does not show them).
func (s *Server) capacityFigures() metrics.Capacity {
	c := metrics.Capacity{
		RequestSlots: len(s.cap.slots), RequestSlotsLimit: cap(s.cap.slots),
		BodyBytes: s.cap.bodies.used.Load(), BodyBytesLimit: s.cap.bodies.max,
		Uploads: s.cap.uploads.inUse(), UploadsLimit: s.cap.uploads.max,
		ConnectionsLimit: s.cfg.MaxConns,
	}
	if lim := s.conns.Load(); lim != nil {
		c.Connections, _, _ = lim.saturated()
	}
	return c
}
