package spatial

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// observeCalls reports each RPC's method, status code and duration to fn.
func observeCalls(fn func(method, code string, d time.Duration)) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		fn(method, status.Code(err).String(), time.Since(start))
		return err
	}
}
