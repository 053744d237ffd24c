package spatial

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// ErrUnavailable is wrapped by errors of calls the spatial server did not answer: it
// is down, unreachable, overloaded, or did not answer within the call's deadline.
var ErrUnavailable = errors.New("spatial server unavailable")

// ErrNotFound is wrapped by errors of calls for a uuid the spatial server does not know.
var ErrNotFound = errors.New("not found on the spatial server")

// CallError is a failed call to the spatial server. Its message names the call and the
// uuids involved but not the server's address, so it can be shown to users (an NDJSON
// "error" line); the gRPC status is kept for logs and for status.Code.
type CallError struct {
	// Method is the full gRPC method name, e.g. "/seerep.LabelService/GetClass".
	Method string
	// Target says what was asked for, e.g. "class 3f2a… of project 9c1d…".
	Target string
	Code   codes.Code
	// Err is the gRPC status error.
	Err     error
	timeout time.Duration
	queued  bool // the deadline passed waiting for a free slot, not for the server
}

func (e *CallError) Error() string {
	var what string
	switch {
	case e.queued:
		what = fmt.Sprintf("%s: too many calls in flight, no free slot within %v", ErrUnavailable, e.timeout)
	case e.Code == codes.Unavailable:
		what = ErrUnavailable.Error()
	case e.Code == codes.DeadlineExceeded:
		what = fmt.Sprintf("%s: no answer within %v", ErrUnavailable, e.timeout)
	case e.Code == codes.NotFound:
		what = ErrNotFound.Error()
	default:
		what = "spatial server error: " + e.Code.String()
		if d := status.Convert(e.Err).Message(); d != "" {
			what += ": " + d
		}
	}
	return fmt.Sprintf("spatial: %s %s: %s", shortName(e.Method), e.Target, what)
}

// Unwrap exposes ErrUnavailable or ErrNotFound where they apply, and the status error.
func (e *CallError) Unwrap() []error {
	switch e.Code {
	case codes.Unavailable, codes.DeadlineExceeded:
		return []error{ErrUnavailable, e.Err}
	case codes.NotFound:
		return []error{ErrNotFound, e.Err}
	}
	return []error{e.Err}
}

// GRPCStatus lets status.Code and status.FromError see the server's status.
func (e *CallError) GRPCStatus() *status.Status { return status.Convert(e.Err) }

// invoke sends one unary RPC. It waits for a free slot (at most CallTimeout), then
// gives the call its own deadline (timeout), so time spent queueing behind other
// beds' calls is not charged to a healthy server. An Unavailable answer is tried again
// (Attempts), each attempt with a fresh slot and deadline: such answers come fast.
func (c *Client) invoke(ctx context.Context, method, target string, timeout time.Duration, req, resp proto.Message) error {
	var err error
	queued := false
	for attempt := 1; ; attempt++ {
		queued, err = c.invokeOnce(ctx, method, timeout, req, resp)
		if err == nil {
			return nil
		}
		// A short pause before trying again: a flapping server deserves a moment.
		if status.Code(err) != codes.Unavailable || attempt >= c.cfg.Attempts ||
			!pause(ctx, time.Duration(attempt)*20*time.Millisecond) {
			break
		}
		proto.Reset(resp)
	}
	if ctx.Err() != nil {
		// The caller gave up: say so, rather than blame the server.
		return fmt.Errorf("spatial: %s %s: %w", shortName(method), target, ctx.Err())
	}
	code := status.Code(err)
	if errors.Is(err, context.DeadlineExceeded) {
		code, err = codes.DeadlineExceeded, status.FromContextError(err).Err()
	}
	return &CallError{Method: method, Target: target, Code: code, Err: err, timeout: timeout, queued: queued}
}

// pause waits for d or until ctx is done, and reports whether ctx is still live: a
// caller that gave up during the pause must not send another attempt.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// invokeOnce makes one attempt; queued reports that it failed waiting for a slot.
func (c *Client) invokeOnce(ctx context.Context, method string, timeout time.Duration, req, resp proto.Message) (queued bool, err error) {
	wctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	select {
	case c.sem <- struct{}{}:
		cancel()
	case <-wctx.Done():
		cancel()
		return true, wctx.Err()
	}
	defer func() { <-c.sem }()
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	// Raise the maximum to n unless another call raised it further meanwhile.
	for m := c.maxInFlight.Load(); n > m; m = c.maxInFlight.Load() {
		if c.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	c.callsMu.Lock()
	c.calls[method]++
	c.callsMu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return false, c.conn.Invoke(cctx, method, req, resp)
}

func shortName(method string) string { return method[strings.LastIndexByte(method, '/')+1:] }

// cachedCall is one of the small calls a bed is read with: answers are cached and
// identical calls in flight collapsed. kind names the call in cache keys; the request
// and the error's target are made from the project and the id asked for (a uuid or a
// frame) only when the call is sent or fails, so a bed served from the cache costs
// little more than its keys.
type cachedCall[T proto.Message] struct {
	kind, method string
	target       func(project, id string) string
	request      func(project, id string) proto.Message
	newResp      func() T
}

// fetch answers from the cache, or joins an identical call in flight, or makes the
// call; successful answers are cached. The returned message is shared: read it, never
// modify it.
func (cc cachedCall[T]) fetch(c *Client, ctx context.Context, project, id string) (T, error) {
	var zero T
	key := cc.kind + "\x00" + project + "\x00" + id
	if v, ok := c.cache.get(key); ok {
		c.cacheHits.Add(1)
		if nf, ok := v.(notFoundAnswer); ok {
			return zero, nf.err
		}
		return v.(T), nil
	}
	v, err, joined := c.flight.do(ctx, key, func(fctx context.Context) (any, error) {
		resp := cc.newResp()
		if err := c.invoke(fctx, cc.method, cc.target(project, id), c.cfg.CallTimeout, cc.request(project, id), resp); err != nil {
			if errors.Is(err, ErrNotFound) {
				c.cache.put(key, notFoundAnswer{err})
			}
			return nil, err
		}
		c.cache.put(key, resp)
		return resp, nil
	})
	if joined {
		c.collapsed.Add(1)
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) && !isCallError(err) {
			return zero, fmt.Errorf("spatial: %s %s: %w", shortName(cc.method), cc.target(project, id), err)
		}
		return zero, err
	}
	return v.(T), nil
}

// notFoundAnswer is a cached NotFound: a frame without a transform is asked about on
// every read of its bed, and without this would cost a round trip each time.
type notFoundAnswer struct{ err error }

func isCallError(err error) bool {
	var ce *CallError
	return errors.As(err, &ce)
}
