package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gardend/gardend/spatial"
)

// /readyz says whether this server can do its work now: beside /healthz (liveness:
// the process answers), it checks what requests depend on. A supervisor or load
// balancer takes a server that is not ready out of rotation; it does not restart it.

// readinessCheck is one thing /readyz checks; name keys it in the answer. A check
// returns when ctx ends at the latest, with an optional detail for operators (public:
// no secrets) and an error when it fails.
type readinessCheck struct {
	name  string
	check func(ctx context.Context) (detail string, err error)
}

// errSaturated fails a capacity check: the server is healthy but new work would be
// refused (503) now, so a load balancer should send it elsewhere.
var errSaturated = errors.New("saturated")

// noDetail adapts a check that has nothing to report beside its error.
func noDetail(check func(context.Context) error) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) { return "", check(ctx) }
}

// readinessTimeout bounds each check of one /readyz request.
const readinessTimeout = 2 * time.Second

func (s *Server) readinessRoutes() []route {
	checks := s.readinessChecks()
	return []route{
		{method: "GET", path: "/readyz", handler: s.handleReady(checks), public: true, slot: slotNone},
		{method: "GET", path: "/version", handler: s.handleVersion, public: true},
	}
}

// readinessChecks: a request slot and a connection are free (else new work gets 503
// or is refused); the database answers a read; the spatial server, when one is
// configured, is connected (the beds and plants endpoints need it).
func (s *Server) readinessChecks() []readinessCheck {
	checks := []readinessCheck{
		{name: "requests", check: s.checkRequestSlots},
		{name: "connections", check: s.checkConnections},
		{name: "database", check: noDetail(s.pingDB)},
	}
	if s.spatial != nil {
		checks = append(checks, readinessCheck{name: "spatial", check: noDetail(s.spatial.Reachable)})
	}
	return checks
}

// Alive reports whether the server can still do its work at all: its database
// answers a read within ctx. The systemd watchdog is fed only while it does.
func (s *Server) Alive(ctx context.Context) error { return s.pingDB(ctx) }

// checkResult is one check in the /readyz answer.
type checkResult struct {
	Status     string  `json:"status"` // "ok" or "failing"
	Detail     string  `json:"detail,omitempty"`
	Error      string  `json:"error,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}

type readiness struct {
	Status string                 `json:"status"` // "ready" or "not ready"
	Checks map[string]checkResult `json:"checks"`
}

func (s *Server) handleReady(checks []readinessCheck) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readinessTimeout)
		defer cancel()
		res := readiness{Status: "ready", Checks: make(map[string]checkResult, len(checks))}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range checks {
			wg.Go(func() {
				start := time.Now()
				detail, err := c.check(ctx)
				cr := checkResult{Status: "ok", Detail: detail, DurationMS: durationMS(time.Since(start))}
				if err != nil {
					cr.Status, cr.Error = "failing", publicCheckError(err)
					if !errors.Is(err, errSaturated) { // busy is not broken: no log line per probe
						s.log.Warn().Err(err).Str("check", c.name).Str("request_id", requestID(r)).Msg("readiness check failed")
					}
				}
				mu.Lock()
				res.Checks[c.name] = cr
				if err != nil {
					res.Status = "not ready"
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		status := http.StatusOK
		if res.Status != "ready" {
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
		}
		w.Header()["Cache-Control"] = headerNoStore
		s.writeJSON(w, r, status, res)
	}
}

// publicCheckError says why a check failed without upstream or internal detail; the
// log has that.
func publicCheckError(err error) string {
	switch {
	case errors.Is(err, errSaturated):
		return "saturated"
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer within " + readinessTimeout.String()
	case errors.Is(err, spatial.ErrUnavailable):
		return "spatial server unavailable"
	}
	return "failed; the server log has the cause"
}

// shared runs fn for callers of the returned check, one run at a time: a caller
// arriving while fn runs waits for that run's result instead of starting another,
// so probes of a hung disk never pile up goroutines. Each caller still returns when
// its ctx ends.
func shared(fn func() error) func(ctx context.Context) error {
	type run struct {
		done chan struct{}
		err  error // set before done is closed
	}
	var (
		mu      sync.Mutex
		current *run
	)
	return func(ctx context.Context) error {
		mu.Lock()
		r := current
		if r == nil {
			r = &run{done: make(chan struct{})}
			current = r
			go func() {
				r.err = fn()
				mu.Lock()
				current = nil
				mu.Unlock()
				close(r.done)
			}()
		}
		mu.Unlock()
		select {
		case <-r.done:
			return r.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
