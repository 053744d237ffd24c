package server

import (
	"context"
	"fmt"
	"time"
)

// MaxCompatLineGap bounds --compat-line-gap: beyond it a garden's stream would take
// longer than a client waits.
const MaxCompatLineGap = 10 * time.Second

// CheckCompatLineGap validates Config.CompatLineGap.
func CheckCompatLineGap(d time.Duration) error {
	if d < 0 || d > MaxCompatLineGap {
		return fmt.Errorf("--compat-line-gap %v: use 0 (off) up to %v", d, MaxCompatLineGap)
	}
	return nil
}

// compatLineGap waits Config.CompatLineGap before every bed line but the first, so a
// client that parses each network read as one JSON document (the original PlantMap
// web client) more often gets one line per read. No gap can promise that: a busy
// client reads late and gets several lines at once (measured: 1 of 19 logins showed
// every bed with 200 ms, docs/migrating.md), and every client pays the wait, so it is
// off unless an operator asks. It reports false when the client went away meanwhile.
func (s *Server) compatLineGap(ctx context.Context, first bool) bool {
	if first || s.cfg.CompatLineGap <= 0 {
		return true
	}
	t := time.NewTimer(s.cfg.CompatLineGap)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
