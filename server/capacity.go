package server

import (
	"net/http"
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
	slots   chan struct{}
	uploads *uploadSlots
	bodies  *bodyBudget
}

func newCapacity(cfg *Config) *capacity {
	return &capacity{
		slots:   make(chan struct{}, cfg.MaxConcurrent),
		uploads: newUploadSlots(cfg.MaxUploads, cfg.BodyMinRate),
		bodies:  newBodyBudget(cfg.BodyBufferBytes, cfg.MaxBodyBytes),
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
// read by then (bufferBody), so a slow client never holds a slot while it sends. A
// client that does not read its answer still holds the slot while the handler waits
// to write it (up to --write-timeout): over HTTP/1.1 one per connection, so the
// per-address connection cap bounds what one address holds; over HTTP/2 each slot a
// connection holds counts as a connection of its address (connLimiter.takeStream).
func (s *Server) requestSlot(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			if lc := limitedConnOf(r); lc != nil {
				if !lc.l.takeStream(lc) {
					s.writeError(w, r, errAddrBusy)
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
		ri := infoOf(r)
		if ri != nil {
			ri.holdsSlot = true
		}
		defer func() {
			if ri == nil || ri.holdsSlot {
				<-s.cap.slots
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// releaseSlot gives the request's slot back before the handler ends, when all that is
// left is sending a response whose pace the client sets (an image download): a slow
// reader then holds its connection, not a slot.
func (s *Server) releaseSlot(r *http.Request) {
	if ri := infoOf(r); ri != nil && ri.holdsSlot {
		ri.holdsSlot = false
		<-s.cap.slots
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
		c.Connections, _ = lim.saturated()
	}
	return c
}
