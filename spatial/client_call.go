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
}

func (e *CallError) Error() string {
	name := e.Method[strings.LastIndexByte(e.Method, '/')+1:]
	var what string
	switch e.Code {
	case codes.Unavailable:
		what = ErrUnavailable.Error()
	case codes.DeadlineExceeded:
		what = fmt.Sprintf("%s: no answer within %v", ErrUnavailable, e.timeout)
	case codes.NotFound:
		what = ErrNotFound.Error()
	default:
		what = "spatial server error: " + e.Code.String()
		if d := status.Convert(e.Err).Message(); d != "" {
			what += ": " + d
		}
	}
	return fmt.Sprintf("spatial: %s %s: %s", name, e.Target, what)
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

// invoke sends one unary RPC: it waits for a free slot, gives the call its own deadline
// (which covers the wait too), retries Unavailable answers while the deadline allows,
// and counts what it sent.
func (c *Client) invoke(ctx context.Context, method, target string, req, resp proto.Message) error {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	var err error
	for attempt := 1; ; attempt++ {
		if err = c.invokeOnce(cctx, method, req, resp); err == nil {
			return nil
		}
		if status.Code(err) != codes.Unavailable || attempt >= c.cfg.Attempts || cctx.Err() != nil {
			break
		}
		// A short pause: a refused connection is retried at once by nothing else, and
		// a flapping server deserves a moment.
		t := time.NewTimer(time.Duration(attempt) * 20 * time.Millisecond)
		select {
		case <-t.C:
		case <-cctx.Done():
			t.Stop()
		}
		proto.Reset(resp)
	}
	if ctx.Err() != nil {
		// The caller gave up: say so, rather than blame the server.
		return fmt.Errorf("spatial: %s %s: %w", method[strings.LastIndexByte(method, '/')+1:], target, ctx.Err())
	}
	code := status.Code(err)
	if cctx.Err() != nil {
		// Deadline hit while waiting for a slot or between attempts, or the status of
		// the aborted call: either way our deadline.
		code = codes.DeadlineExceeded
		if status.Code(err) == codes.OK || status.Code(err) == codes.Unknown {
			err = status.FromContextError(cctx.Err()).Err()
		}
	}
	return &CallError{Method: method, Target: target, Code: code, Err: err, timeout: c.cfg.CallTimeout}
}

func (c *Client) invokeOnce(ctx context.Context, method string, req, resp proto.Message) error {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	n := c.inFlight.Add(1)
	for m := c.maxInFlight.Load(); n > m && !c.maxInFlight.CompareAndSwap(m, n); m = c.maxInFlight.Load() {
	}
	c.callsMu.Lock()
	c.calls[method]++
	c.callsMu.Unlock()
	err := c.conn.Invoke(ctx, method, req, resp)
	c.inFlight.Add(-1)
	<-c.sem
	return err
}

// fetch answers from the cache, or joins an identical call in flight, or makes the
// call; successful answers are cached under key. The returned message is shared: read
// it, never modify it.
func fetch[T proto.Message](c *Client, ctx context.Context, key, method, target string, req proto.Message, newResp func() T) (T, error) {
	var zero T
	if v, ok := c.cache.get(key); ok {
		c.cacheHits.Add(1)
		return v.(T), nil
	}
	v, err, joined := c.flight.do(ctx, key, func(fctx context.Context) (any, error) {
		resp := newResp()
		if err := c.invoke(fctx, method, target, req, resp); err != nil {
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
			return zero, fmt.Errorf("spatial: %s %s: %w", method[strings.LastIndexByte(method, '/')+1:], target, err)
		}
		return zero, err
	}
	return v.(T), nil
}

func isCallError(err error) bool {
	var ce *CallError
	return errors.As(err, &ce)
}
