package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Upload slots: at most MaxUploads image uploads stream to disk at once. An upload
// takes its slot only once its body has begun to arrive (awaitBody), so a client that
// declares an upload and sends nothing holds none. And since the body's pace allows
// a pause of --body-timeout, at the cap the slot of an upload that has fallen behind
// --body-min-rate since it took it is given to the newcomer: a few bytes now and then
// cannot hold every slot either, while uploads that keep the pace are never cut.

var (
	errUploadsBusy = &apiError{status: http.StatusServiceUnavailable, retryAfter: time.Second,
		detail: "the server is at its limit of concurrent image uploads; retry shortly"}
)

// uploadGrace is how long an upload may hold its slot before it must have kept
// --body-min-rate to keep it at the cap.
const uploadGrace = time.Second

type uploadSlots struct {
	max   int
	rate  int64         // bytes per second an upload must keep to keep its slot at the cap
	grace time.Duration // uploadGrace; tests shorten it

	mu    sync.Mutex
	held  []*uploadHold
	freed chan struct{} // closed, and replaced, when a slot is given back
}

func newUploadSlots(max int, rate int64) *uploadSlots {
	return &uploadSlots{max: max, rate: rate, grace: uploadGrace, freed: make(chan struct{})}
}

func (u *uploadSlots) inUse() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.held)
}

// uploadHold is one upload's slot: what its body has brought since it took it.
type uploadHold struct {
	since    time.Time
	received atomic.Int64
	// preempted: the slot went to another upload; the body reads no more.
	preempted atomic.Bool
	// ended: the whole body has arrived. The upload keeps its slot while it is
	// checked and stored (a photo waits for its decode there), but it is behind no
	// pace: preempting it would free nothing, and cutting its connection's reads
	// cancels its request, losing what its client sent in full.
	ended atomic.Bool
	// cut ends a read of the body that waits (by moving its read deadline).
	cut func()
}

// behind reports whether h has brought less than rate bytes a second since grace
// after it took its slot.
func (h *uploadHold) behind(now time.Time, grace time.Duration, rate int64) bool {
	if h.ended.Load() {
		return false
	}
	late := now.Sub(h.since) - grace
	return late > 0 && float64(h.received.Load()) < late.Seconds()*float64(rate)
}

// take reserves a slot for h. At the cap it preempts the holder furthest behind the
// pace, if one is, and waits (within ctx, at most a second) for it to give its slot
// back; otherwise it answers errUploadsBusy at once.
func (u *uploadSlots) take(ctx context.Context, h *uploadHold) error {
	var wait <-chan time.Time
	for {
		u.mu.Lock()
		now := time.Now()
		if len(u.held) < u.max {
			h.since = now
			u.held = append(u.held, h)
			u.mu.Unlock()
			return nil
		}
		if wait == nil {
			var victim *uploadHold
			for _, o := range u.held {
				if !o.preempted.Load() && o.behind(now, u.grace, u.rate) && (victim == nil || o.since.Before(victim.since)) {
					victim = o
				}
			}
			if victim == nil {
				u.mu.Unlock()
				return errUploadsBusy
			}
			victim.preempted.Store(true)
			victim.cut()
			wait = time.After(time.Second)
		}
		freed := u.freed
		u.mu.Unlock()
		select {
		case <-freed:
		case <-wait:
			return errUploadsBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (u *uploadSlots) give(h *uploadHold) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, o := range u.held {
		if o == h {
			u.held = append(u.held[:i], u.held[i+1:]...)
			break
		}
	}
	close(u.freed)
	u.freed = make(chan struct{})
}

func errUploadPreempted(rate int64) error {
	return &apiError{status: http.StatusRequestTimeout,
		detail: "the upload fell behind " + formatBytes(rate) + " per second while every upload slot was taken, and gave its slot to another; retry when the link is faster or the server less busy"}
}

// uploadBody is an upload's body once it holds a slot: it counts what arrives and
// stops once the slot was preempted.
type uploadBody struct {
	io.ReadCloser
	hold *uploadHold
	rate int64
}

func (b *uploadBody) Read(p []byte) (int, error) {
	if b.hold.preempted.Load() {
		return 0, errUploadPreempted(b.rate)
	}
	n, err := b.ReadCloser.Read(p)
	b.hold.received.Add(int64(n))
	if b.hold.preempted.Load() {
		return n, errUploadPreempted(b.rate)
	}
	if err == io.EOF {
		b.hold.ended.Store(true)
	}
	return n, err
}

// takeUploadSlot waits for r's body to begin, then reserves one of MaxUploads
// upload slots; call release to free it. r.Body is replaced by one that counts what
// arrives for the slot's pace.
func (s *Server) takeUploadSlot(w http.ResponseWriter, r *http.Request) (release func(), err error) {
	if err := awaitBody(r); err != nil {
		return nil, err
	}
	rc := http.NewResponseController(w)
	h := &uploadHold{cut: func() { _ = rc.SetReadDeadline(time.Now()) }}
	if err := s.cap.uploads.take(r.Context(), h); err != nil {
		return nil, err
	}
	r.Body = &uploadBody{ReadCloser: r.Body, hold: h, rate: s.cap.uploads.rate}
	return func() { s.cap.uploads.give(h) }, nil
}

// awaitBody blocks until the first byte of r's body has arrived, or the body has
// ended or failed (what reads it next then sees the same). The byte stays in r.Body.
func awaitBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	sb := &startedBody{ReadCloser: r.Body}
	for sb.n == 0 && sb.err == nil {
		sb.n, sb.err = r.Body.Read(sb.first[:])
	}
	r.Body = sb
	var api *apiError
	if errors.As(sb.err, &api) {
		return api // 408: nothing came within --body-timeout
	}
	return nil
}

// startedBody is a body whose first byte (or end) has been read already.
type startedBody struct {
	io.ReadCloser
	first [1]byte
	n     int
	err   error
}

func (b *startedBody) Read(p []byte) (int, error) {
	switch {
	case b.n > 0:
		if len(p) == 0 {
			return 0, nil
		}
		p[0], b.n = b.first[0], 0
		return 1, nil
	case b.err != nil:
		return 0, b.err
	}
	return b.ReadCloser.Read(p)
}
