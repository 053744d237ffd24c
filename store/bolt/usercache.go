package bolt

import (
	"sync"

	"github.com/gardend/gardend/store"
)

// userCache keeps decoded users so token authentication, the hottest path, does not
// decode JSON per request. Only this process writes the database (bbolt's file lock),
// so invalidating on every user write keeps it coherent. The generation counter stops a
// reader that began before a write from caching what it read.
type userCache struct {
	mu  sync.RWMutex
	gen uint64
	m   map[uint64]store.User
}

const userCacheMax = 10000

func (c *userCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

func (c *userCache) get(id uint64) (store.User, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u, ok := c.m[id]
	return u, ok
}

// put caches u if no user was written since gen was read.
func (c *userCache) put(u store.User, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil || len(c.m) >= userCacheMax {
		c.m = make(map[uint64]store.User)
	}
	c.m[u.ID] = u
}

func (c *userCache) invalidate(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, id)
}

// reset forgets every cached user (writes of many users at once: replicas).
func (c *userCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m = nil
}
