package spatial

import (
	"fmt"
	"testing"
	"time"
)

func TestTTLCache(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	tests := []struct {
		name string
		run  func(c *ttlCache)
		want []string // keys present afterwards
	}{
		{"hit within ttl", func(c *ttlCache) {
			c.put("a", 1)
			now = now.Add(9 * time.Second)
		}, []string{"a"}},
		{"expired at ttl", func(c *ttlCache) {
			c.put("a", 1)
			now = now.Add(10 * time.Second)
		}, nil},
		{"oldest evicted when full", func(c *ttlCache) {
			for i := 0; i < 4; i++ {
				c.put(fmt.Sprint(i), i)
				now = now.Add(time.Second)
			}
		}, []string{"1", "2", "3"}},
		{"expired evicted before live ones", func(c *ttlCache) {
			c.put("old", 0)
			now = now.Add(8 * time.Second)
			c.put("a", 1)
			c.put("b", 2)
			now = now.Add(3 * time.Second) // "old" expired, a and b live
			c.put("c", 3)
		}, []string{"a", "b", "c"}},
		{"rewrite refreshes", func(c *ttlCache) {
			c.put("a", 1)
			now = now.Add(8 * time.Second)
			c.put("a", 2)
			now = now.Add(8 * time.Second)
		}, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTTLCache(10*time.Second, 3, clock)
			tt.run(c)
			for _, k := range tt.want {
				if _, ok := c.get(k); !ok {
					t.Errorf("%s missing", k)
				}
			}
			for _, k := range []string{"old", "0", "a", "b", "c", "1", "2", "3"} {
				if _, ok := c.get(k); ok && !cacheHas(tt.want, k) {
					t.Errorf("%s present", k)
				}
			}
			if c.len() > 3 {
				t.Errorf("len %d above the cap", c.len())
			}
		})
	}
}

func TestTTLCacheNil(t *testing.T) {
	var c *ttlCache // a disabled cache
	c.put("a", 1)
	if _, ok := c.get("a"); ok || c.len() != 0 {
		t.Error("nil cache stored something")
	}
	c.reset()
}

func cacheHas(s []string, k string) bool {
	for _, v := range s {
		if v == k {
			return true
		}
	}
	return false
}
