package server

import (
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// DefaultMaxCloudResponses bounds the point-cloud files being sent at once (the
// signed PLY URLs of the 3D scene and the web app's plant clouds). Each streams from
// its file through a buffer of about 40 KiB whatever the cloud's size, so the bound is
// about disk reads and CPU more than memory.
const DefaultMaxCloudResponses = 32

// cloudSlots counts the cloud responses in progress, in all and per client address
// block: one address may hold a quarter of the slots, so a client that opens many
// downloads and reads them slowly cannot keep everybody else's clouds away (the write
// timeout ends each download it stalls).
type cloudSlots struct {
	max, perAddr int

	mu     sync.Mutex
	used   int
	byAddr map[netip.Addr]int
}

func newCloudSlots(max int) *cloudSlots {
	if max <= 0 {
		max = DefaultMaxCloudResponses
	}
	return &cloudSlots{max: max, perAddr: (max + 3) / 4, byAddr: map[netip.Addr]int{}}
}

var errCloudsBusy = &apiError{status: http.StatusServiceUnavailable, retryAfter: time.Second,
	detail: "the server is sending as many point clouds as it may at once; retry shortly"}

// take reserves a slot for a client at addr; call the result to free it. All slots
// taken, or the address's share, is errCloudsBusy.
func (c *cloudSlots) take(addr netip.Addr) (release func(), err error) {
	block := addrBlock(addr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.used >= c.max || c.byAddr[block] >= c.perAddr {
		return nil, errCloudsBusy
	}
	c.used++
	c.byAddr[block]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.used--
			if c.byAddr[block]--; c.byAddr[block] == 0 {
				delete(c.byAddr, block)
			}
		})
	}, nil
}

// inUse is the number of slots taken (metrics, tests).
func (c *cloudSlots) inUse() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// takeCloudSlot reserves a cloud-response slot for the request's client.
func (s *Server) takeCloudSlot(r *http.Request) (release func(), err error) {
	return s.cloudSlots.take(clientAddr(r, s.cfg.TrustProxy))
}
