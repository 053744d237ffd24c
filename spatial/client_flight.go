package spatial

import (
	"context"
	"sync"
	"sync/atomic"
)

// flightGroup collapses identical calls that are in flight at the same time into one.
// Unlike the usual singleflight, the shared call does not run under any one caller's
// context: a caller that gives up leaves without cancelling it for the others, and the
// call is cancelled only when every caller waiting for it has gone.
type flightGroup struct {
	mu    sync.Mutex
	calls map[string]*flightCall
	// joins counts the callers that joined a call in flight, as they join (not when
	// the call ends), so a test can see them all waiting.
	joins atomic.Int64
}

type flightCall struct {
	done    chan struct{}
	val     any
	err     error
	waiters int
	cancel  context.CancelFunc
}

// do runs fn once for all concurrent callers with the same key and returns its result;
// joined reports whether this caller joined a call already in flight. fn's context keeps
// ctx's values but not its cancellation.
func (g *flightGroup) do(ctx context.Context, key string, fn func(context.Context) (any, error)) (val any, err error, joined bool) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[string]*flightCall{}
	}
	c, joined := g.calls[key]
	if joined {
		c.waiters++
		g.joins.Add(1)
	} else {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &flightCall{done: make(chan struct{}), waiters: 1, cancel: cancel}
		g.calls[key] = c
		go g.run(fctx, key, c, fn)
	}
	g.mu.Unlock()

	select {
	case <-c.done:
		return c.val, c.err, joined
	case <-ctx.Done():
		g.mu.Lock()
		c.waiters--
		if c.waiters == 0 {
			// Nobody wants the answer any more: stop the call, and unlist it so a later
			// caller starts afresh instead of joining a cancelled call.
			c.cancel()
			if g.calls[key] == c {
				delete(g.calls, key)
			}
		}
		g.mu.Unlock()
		return nil, ctx.Err(), joined
	}
}

func (g *flightGroup) run(ctx context.Context, key string, c *flightCall, fn func(context.Context) (any, error)) {
	defer c.cancel()
	c.val, c.err = fn(ctx)
	g.mu.Lock()
	if g.calls[key] == c {
		delete(g.calls, key)
	}
	g.mu.Unlock()
	close(c.done)
}
