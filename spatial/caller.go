package spatial

import "context"

// Caller says whom a call is made for. The server puts one in each request's context.
type Caller struct {
	// RequestID goes into the log line of a failed call, to find the request.
	RequestID string
	// Share names the budget the call's slot is drawn from: when calls wait for slots,
	// each share gets them in turn, so one huge garden cannot starve another
	// request's calls. Calls without a Share draw from a common one.
	Share string
}

type callerKey struct{}

// WithCaller returns ctx carrying c for the calls made with it.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

func callerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}
