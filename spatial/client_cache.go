package spatial

import (
	"container/list"
	"sync"
	"time"
)

// ttlCache keeps successful answers for a fixed time so repeated page loads do not cost
// round trips. Every entry lives for the same TTL, so insertion order is also expiry
// order: the front of the list is always the oldest and the first to expire, which makes
// both "drop expired" and "drop oldest when full" O(1).
type ttlCache struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	now     func() time.Time
	entries map[string]*list.Element
	order   *list.List // of *cacheEntry, oldest first
}

type cacheEntry struct {
	key     string
	val     any
	expires time.Time
}

func newTTLCache(ttl time.Duration, max int, now func() time.Time) *ttlCache {
	return &ttlCache{ttl: ttl, max: max, now: now, entries: map[string]*list.Element{}, order: list.New()}
}

// get returns the value stored under key if it has not expired.
func (c *ttlCache) get(key string) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !c.now().Before(e.expires) {
		c.remove(el)
		return nil, false
	}
	return e.val, true
}

// put stores val under key for the TTL, evicting expired entries and then, if still
// full, the oldest ones.
func (c *ttlCache) put(key string, val any) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	for front := c.order.Front(); front != nil && !now.Before(front.Value.(*cacheEntry).expires); front = c.order.Front() {
		c.remove(front)
	}
	for c.order.Len() >= c.max {
		c.remove(c.order.Front())
	}
	c.entries[key] = c.order.PushBack(&cacheEntry{key: key, val: val, expires: now.Add(c.ttl)})
}

func (c *ttlCache) remove(el *list.Element) {
	delete(c.entries, el.Value.(*cacheEntry).key)
	c.order.Remove(el)
}

func (c *ttlCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *ttlCache) reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = map[string]*list.Element{}
	c.order.Init()
}
