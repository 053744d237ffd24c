package server

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxCloudResponses bounds the point-cloud files being sent at once (the
// signed PLY URLs of the 3D scene and the web app's plant clouds). Each streams from
// its file through a buffer of about 40 KiB whatever the cloud's size, so the bound is
// about disk reads and CPU more than memory.
const DefaultMaxCloudResponses = 32

// cloudSlots counts the cloud responses in progress, in all and per client address
// block: one address may hold a quarter of the slots, so a client that opens many
// downloads cannot keep everybody else's clouds away. And since a client sets the
// pace of its download, at the cap the slot of a response that is behind
// --body-min-rate goes to the newcomer (as upload slots do): else four addresses
// reading nothing would hold every slot for --write-timeout at a time, renewably, at
// no bandwidth. Responses that keep the pace are never cut.
//
// Behind means a write that has waited longer than the pace allows for it (plus a
// grace): the bytes sent since the start would not do, as the socket buffers of both
// ends take several MiB before a write waits, which at 16 KiB/s is credit for longer
// than --write-timeout.
type cloudSlots struct {
	max, perAddr int
	rate         int64         // bytes per second a response must keep to keep its slot at the cap
	grace        time.Duration // cloudGrace; tests shorten it

	mu     sync.Mutex
	held   map[*cloudHold]struct{}
	byAddr map[netip.Addr]int
	freed  chan struct{} // closed, and replaced, when a slot is given back
}

// cloudGrace is how much longer than the pace allows a write may wait before its
// response gives its slot away at the cap.
const cloudGrace = time.Second

func newCloudSlots(max int, rate int64) *cloudSlots {
	if max <= 0 {
		max = DefaultMaxCloudResponses
	}
	if rate <= 0 {
		rate = DefaultBodyMinRate
	}
	return &cloudSlots{max: max, perAddr: (max + 3) / 4, rate: rate, grace: cloudGrace,
		held: map[*cloudHold]struct{}{}, byAddr: map[netip.Addr]int{}, freed: make(chan struct{})}
}

var errCloudsBusy = &apiError{status: http.StatusServiceUnavailable, retryAfter: time.Second,
	detail: "the server is sending as many point clouds as it may at once; retry shortly"}

// cloudHold is one response's slot, and since when (unix nanoseconds; 0 when none)
// a write of how many bytes waits.
type cloudHold struct {
	block     netip.Addr
	waiting   atomic.Int64
	writing   atomic.Int64
	preempted atomic.Bool
	// cut ends a write of the response that waits (by moving its write deadline);
	// nil: the hold cannot be cut and is never preempted.
	cut func()
}

// behind reports how long h's waiting write has waited beyond grace and what its
// length takes at rate bytes a second (> 0: behind).
func (h *cloudHold) behind(now time.Time, grace time.Duration, rate int64) time.Duration {
	since := h.waiting.Load()
	if since == 0 || h.cut == nil {
		return 0
	}
	allowed := grace + time.Duration(float64(h.writing.Load())/float64(rate)*float64(time.Second))
	return now.Sub(time.Unix(0, since)) - allowed
}

// take reserves a slot for a client at addr; call the result to free it. All slots
// taken, or the address's share, is errCloudsBusy.
func (c *cloudSlots) take(addr netip.Addr) (release func(), err error) {
	h := &cloudHold{}
	if err := c.takeHold(context.Background(), addr, h); err != nil {
		return nil, err
	}
	return c.releaser(h), nil
}

// takeHold reserves a slot for h, a client at addr. At the cap it preempts the
// response furthest behind the pace, if one is, and waits (within ctx, at most a
// second) for it to give its slot back; otherwise it answers errCloudsBusy at once,
// as it does when addr has its share.
func (c *cloudSlots) takeHold(ctx context.Context, addr netip.Addr, h *cloudHold) error {
	h.block = addrBlock(addr)
	var wait <-chan time.Time
	for {
		c.mu.Lock()
		if c.byAddr[h.block] >= c.perAddr {
			c.mu.Unlock()
			return errCloudsBusy
		}
		if len(c.held) < c.max {
			c.held[h] = struct{}{}
			c.byAddr[h.block]++
			c.mu.Unlock()
			return nil
		}
		if wait == nil {
			now := time.Now()
			var victim *cloudHold
			var most time.Duration
			for o := range c.held {
				if late := o.behind(now, c.grace, c.rate); late > most && !o.preempted.Load() {
					victim, most = o, late
				}
			}
			if victim == nil {
				c.mu.Unlock()
				return errCloudsBusy
			}
			victim.preempted.Store(true)
			freed := c.freed
			c.mu.Unlock()
			victim.cut() // outside the lock: an HTTP/2 stream's reset goes through its connection
			wait = time.After(time.Second)
			select {
			case <-freed:
				continue
			case <-wait:
				return errCloudsBusy
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		freed := c.freed
		c.mu.Unlock()
		select {
		case <-freed:
		case <-wait:
			return errCloudsBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// releaser gives h's slot back, once however often it is called.
func (c *cloudSlots) releaser(h *cloudHold) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(c.held, h)
			if c.byAddr[h.block]--; c.byAddr[h.block] <= 0 {
				delete(c.byAddr, h.block)
			}
			close(c.freed)
			c.freed = make(chan struct{})
		})
	}
}

// inUse is the number of slots taken (metrics, tests).
func (c *cloudSlots) inUse() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held)
}

// takeCloudSlot reserves a cloud-response slot for the request's client. Send the
// cloud through the writer it returns: it tells the slot's pace, and ends the
// response once the slot was preempted.
func (s *Server) takeCloudSlot(w http.ResponseWriter, r *http.Request) (send http.ResponseWriter, release func(), err error) {
	rc := http.NewResponseController(w)
	h := &cloudHold{cut: func() { _ = rc.SetWriteDeadline(time.Now()) }}
	if err := s.cloudSlots.takeHold(r.Context(), clientAddr(r, s.cfg.TrustProxy), h); err != nil {
		return nil, nil, err
	}
	return &cloudWriter{ResponseWriter: w, hold: h}, s.cloudSlots.releaser(h), nil
}

// errCloudPreempted ends a response whose slot went to another (the status is sent by
// then: the connection or stream is cut).
var errCloudPreempted = errors.New("the point cloud response fell behind the pace while every cloud slot was taken, and gave its slot to another")

// cloudWriter is a cloud response's writer once it holds a slot and sends.
type cloudWriter struct {
	http.ResponseWriter
	hold *cloudHold
}

func (w *cloudWriter) Write(p []byte) (int, error) {
	if w.hold.preempted.Load() {
		return 0, errCloudPreempted
	}
	w.hold.writing.Store(int64(len(p)))
	w.hold.waiting.Store(time.Now().UnixNano())
	n, err := w.ResponseWriter.Write(p)
	w.hold.waiting.Store(0)
	if err == nil && w.hold.preempted.Load() {
		err = errCloudPreempted
	}
	return n, err
}

func (w *cloudWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
