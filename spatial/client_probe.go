package spatial

import (
	"context"
	"fmt"

	"google.golang.org/grpc/connectivity"
)

// Addr is the spatial server's address, as configured.
func (c *Client) Addr() string { return c.cfg.Addr }

// Probe connects to the spatial server (the connection is otherwise made on the first
// call) and waits until it is up, it fails, or ctx ends. It sends no call: it checks
// that the server can be reached (TCP, TLS, HTTP/2), not what it holds.
func (c *Client) Probe(ctx context.Context) error {
	c.conn.Connect()
	for {
		st := c.conn.GetState()
		switch st {
		case connectivity.Ready:
			return nil
		case connectivity.TransientFailure, connectivity.Shutdown:
			return fmt.Errorf("%w: cannot connect to %s", ErrUnavailable, c.cfg.Addr)
		}
		if !c.conn.WaitForStateChange(ctx, st) {
			return fmt.Errorf("%w: no connection to %s within the wait: %v", ErrUnavailable, c.cfg.Addr, ctx.Err())
		}
	}
}
