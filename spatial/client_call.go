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

// CallError is a failed call to the spatial server. Its message is fixed per gRPC
// status and names only the call and the bed's project, never the server's address or
// anything the server sent: it is shown to users (an NDJSON "error" line, a 502
// detail). The client logs each failed call once, with the address, the method, the
// code and the server's own message; Target and Upstream keep them for callers.
type CallError struct {
	// Method is the full gRPC method name, e.g. "/seerep.LabelService/GetClass".
	Method string
	// Project is the bed's project uuid (ours, checked when the bed was added).
	Project string
	// Target says what was asked for, e.g. "class 3f2a… of project 9c1d…"; it may hold
	// ids the server sent, so it is for logs only.
	Target string
	Code   codes.Code
	// Err is the gRPC status error; its message is the server's (for logs only).
	Err     error
	timeout time.Duration
	queued  bool // the deadline passed waiting for a free slot, not for the server
}

func (e *CallError) Error() string {
	return callSubject(e.Method, e.Project) + ": " + e.publicText()
}

// callSubject names a call in errors: "spatial: GetClass of project P", or without a
// project (GetProjects) just the method.
func callSubject(method, project string) string {
	if project == "" {
		return "spatial: " + shortName(method)
	}
	return "spatial: " + shortName(method) + " of project " + project
}

// publicText is the fixed text for the failure: what a user may learn of it.
func (e *CallError) publicText() string {
	switch e.Code {
	case codes.Unavailable:
		return ErrUnavailable.Error()
	case codes.DeadlineExceeded:
		if e.queued {
			return fmt.Sprintf("%s: too many calls in flight, no free slot within %v", ErrUnavailable, e.timeout)
		}
		return fmt.Sprintf("%s: no answer within %v", ErrUnavailable, e.timeout)
	case codes.NotFound:
		return ErrNotFound.Error()
	case codes.Canceled:
		return "the spatial server cancelled the call"
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return "the spatial server rejected the request (" + e.Code.String() + ")"
	case codes.PermissionDenied, codes.Unauthenticated:
		return "the spatial server refused gardend's request (" + e.Code.String() + "): check its credentials"
	case codes.ResourceExhausted:
		// grpc-go's own words when an answer exceeds MaxRecvBytes.
		if strings.Contains(e.Upstream(), "larger than max") {
			return "the spatial server's answer is larger than gardend accepts (ResourceExhausted)"
		}
		return "the spatial server is out of resources (ResourceExhausted)"
	case codes.Unimplemented:
		return "the spatial server does not implement this call (Unimplemented)"
	}
	return "spatial server error (" + e.Code.String() + ")"
}

// Upstream is the server's own message: for logs, never for users.
func (e *CallError) Upstream() string { return status.Convert(e.Err).Message() }

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

// invoke sends one unary RPC for project. It waits for a free slot (at most
// CallTimeout), then gives the call its own deadline (timeout), so time spent queueing
// behind other beds' calls is not charged to a healthy server. An Unavailable answer
// is tried again (Attempts), each attempt with a fresh slot and deadline: such answers
// come fast. A failure is logged here, once, whoever waits for the answer.
func (c *Client) invoke(ctx context.Context, method, project, target string, timeout time.Duration, req, resp proto.Message) error {
	start := time.Now()
	var err error
	queued := false
	attempt := 1
	for ; ; attempt++ {
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
		c.log.Debug().Str("spatial", c.cfg.Addr).Str("method", method).Str("target", target).
			Err(ctx.Err()).Dur("took", time.Since(start)).Msg("spatial call abandoned: its caller went away")
		return fmt.Errorf("%s: %w", callSubject(method, project), ctx.Err())
	}
	code := status.Code(err)
	if errors.Is(err, context.DeadlineExceeded) {
		code, err = codes.DeadlineExceeded, status.FromContextError(err).Err()
	}
	ce := &CallError{Method: method, Project: project, Target: target, Code: code, Err: err, timeout: timeout, queued: queued}
	c.logFailure(ctx, ce, attempt, time.Since(start))
	return ce
}

// logFailure logs a failed call with everything an operator needs to look into it.
// NotFound is an answer the protocol expects (a frame without a transform), so it is
// only logged at debug level.
func (c *Client) logFailure(ctx context.Context, ce *CallError, attempts int, took time.Duration) {
	ev := c.log.Warn()
	if ce.Code == codes.NotFound || c.closed.Load() {
		ev = c.log.Debug()
	}
	if id := callerOf(ctx).RequestID; id != "" {
		ev = ev.Str("request_id", id)
	}
	ev.Str("spatial", c.cfg.Addr).Str("method", ce.Method).Str("code", ce.Code.String()).
		Str("upstream", ce.Upstream()).Str("target", ce.Target).Bool("queued", ce.queued).
		Int("attempts", attempts).Dur("took", took).Msg("spatial call failed")
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
	share := callerOf(ctx).Share
	wctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	err = c.slots.acquire(wctx, share)
	cancel()
	if err != nil {
		return true, err
	}
	defer c.slots.release(share)
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
	return cc.fetchVersion(c, ctx, project, id, "")
}

// fetchVersion is fetch for one version of the object (a measurement's stamp): an
// answer cached for another version is not used, so an object updated in place is
// read anew as soon as the project's details show its new version.
func (cc cachedCall[T]) fetchVersion(c *Client, ctx context.Context, project, id, version string) (T, error) {
	var zero T
	key := cc.kind + "\x00" + project + "\x00" + id
	if version != "" {
		key += "\x00" + version
	}
	if v, ok := c.cache.get(key); ok {
		c.cacheHits.Add(1)
		if nf, ok := v.(notFoundAnswer); ok {
			return zero, nf.err
		}
		return v.(T), nil
	}
	v, err, _ := c.flight.do(ctx, key, func(fctx context.Context) (any, error) {
		// A call for the key may have finished between the cache lookup above and
		// now; it cached its answer before leaving the flight, so look again rather
		// than ask the server twice.
		if v, ok := c.cache.get(key); ok {
			if nf, ok := v.(notFoundAnswer); ok {
				return nil, nf.err
			}
			return v, nil
		}
		resp := cc.newResp()
		if err := c.invoke(fctx, cc.method, project, cc.target(project, id), c.cfg.CallTimeout, cc.request(project, id), resp); err != nil {
			if errors.Is(err, ErrNotFound) {
				c.cache.put(key, notFoundAnswer{err})
			}
			return nil, err
		}
		c.cache.put(key, resp)
		return resp, nil
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) && !isCallError(err) {
			return zero, fmt.Errorf("spatial: %s of project %s: %w", shortName(cc.method), project, err)
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
