package spatial

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/connectivity"
)

// Reachable reports whether the connection to the spatial server is up, connecting
// it if idle and waiting (until ctx ends) while it connects. It fails at once while
// the last attempt to connect has failed and the client waits to try again: calls
// then fail just as fast, so it tells what requests would meet. The error wraps
// ErrUnavailable and names no address.
func (c *Client) Reachable(ctx context.Context) error {
	c.conn.Connect()
	for {
		state := c.conn.GetState()
		switch state {
		case connectivity.Ready:
			return nil
		case connectivity.TransientFailure, connectivity.Shutdown:
			return fmt.Errorf("%w: connection %s", ErrUnavailable, strings.ToLower(state.String()))
		}
		if !c.conn.WaitForStateChange(ctx, state) {
			return fmt.Errorf("%w: not connected within the deadline (%s)", ErrUnavailable, strings.ToLower(state.String()))
		}
	}
}
