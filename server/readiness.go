package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gardend/gardend/server/metrics"
	"github.com/gardend/gardend/spatial"
)

// /readyz says whether this node can do its work now: beside /healthz (liveness: the
// process answers), it checks what every request depends on: its capacity and its
// database. A supervisor or load balancer takes a node that is not ready out of
// rotation; it does not restart it. A dependency that only some routes need (the
// spatial server: beds and plants) is an optional check: its failure does not make
// the node unready, since every node shares it and the other routes still work.
//
// Anonymous callers learn ready or not and which checks fail, nothing more: the
// figures behind them (slots and connections in use, timings) and the optional checks
// are on the admin socket (GET /readyz) and in the metrics.

// readinessCheck is one thing /readyz checks; name keys it in the answer. A check
// returns when ctx ends at the latest, with an optional detail for operators (no
// secrets) and an error when it fails.
type readinessCheck struct {
	name string
	// optional: a failure does not make the node unready.
	optional bool
	check    func(ctx context.Context) (detail string, err error)
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
	return []route{
		{method: "GET", path: "/readyz", handler: s.handleReady, public: true, slot: slotNone},
		{method: "GET", path: "/version", handler: s.handleVersion, public: true},
	}
}

// readinessChecks: a request slot and a connection are free (else new work gets 503
// or is refused); the database answers a read; optionally, the spatial server, when
// one is configured, is connected (the beds and plants endpoints need it).
func (s *Server) readinessChecks() []readinessCheck {
	checks := []readinessCheck{
		{name: "requests", check: s.checkRequestSlots},
		{name: "connections", check: s.checkConnections},
		{name: "database", check: noDetail(s.pingDB)},
	}
	if s.spatial != nil {
		checks = append(checks, readinessCheck{name: "spatial", optional: true, check: noDetail(s.checkSpatial)})
	}
	return checks
}

// checkSpatial is the spatial check; it logs when the spatial server becomes
// unreachable and when it is back (the check runs at every metrics scrape and admin
// /readyz, and a line per run would flood the log).
func (s *Server) checkSpatial(ctx context.Context) error {
	err := s.spatial.Reachable(ctx)
	if err != nil && !s.spatialDown.Swap(true) {
		s.log.Warn().Err(err).Str("spatial", s.spatial.Addr()).
			Msg("the spatial data server cannot be reached; beds and plants answer 502 until it can")
	} else if err == nil && s.spatialDown.Swap(false) {
		s.log.Info().Str("spatial", s.spatial.Addr()).Msg("spatial data server reachable again")
	}
	return err
}

// Alive reports whether the server can still do its work at all: its database
// answers a read within ctx. The systemd watchdog is fed only while it does.
func (s *Server) Alive(ctx context.Context) error { return s.pingDB(ctx) }

// checkResult is one check in the admin socket's /readyz answer.
type checkResult struct {
	Status     string  `json:"status"` // "ok" or "failing"
	Optional   bool    `json:"optional,omitempty"`
	Detail     string  `json:"detail,omitempty"`
	Error      string  `json:"error,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}

// readiness is the admin socket's /readyz answer: every check, with its figures.
type readiness struct {
	Status string                 `json:"status"` // "ready" or "not ready"
	Checks map[string]checkResult `json:"checks"`
}

// publicReadiness is the public /readyz answer.
type publicReadiness struct {
	Status  string   `json:"status"`            // "ready" or "not ready"
	Failing []string `json:"failing,omitempty"` // the checks that fail, by name
}

// handleReady answers the public /readyz: the required checks only, by name.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	res := s.runChecks(r, s.readinessChecks(), false)
	pub := publicReadiness{Status: res.Status}
	for name, c := range res.Checks {
		if c.Status != "ok" {
			pub.Failing = append(pub.Failing, name)
		}
	}
	slices.Sort(pub.Failing)
	s.writeReadiness(w, r, res.Status, pub)
}

// handleReadyDetail answers the admin socket's /readyz: every check, optional ones
// included, with details and timings.
func (s *Server) handleReadyDetail(w http.ResponseWriter, r *http.Request) {
	res := s.runChecks(r, s.readinessChecks(), true)
	s.writeReadiness(w, r, res.Status, res)
}

func (s *Server) writeReadiness(w http.ResponseWriter, r *http.Request, status string, v any) {
	code := http.StatusOK
	if status != "ready" {
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "1")
	}
	w.Header()["Cache-Control"] = headerNoStore
	s.writeJSON(w, r, code, v)
}

// runChecks runs checks at once, each within readinessTimeout, the optional ones
// only when asked to. Failures of required checks are logged (but saturation: busy
// is not broken), with r's request id; r may be nil.
func (s *Server) runChecks(r *http.Request, checks []readinessCheck, optional bool) readiness {
	parent := context.Background()
	if r != nil {
		parent = r.Context()
	}
	ctx, cancel := context.WithTimeout(parent, readinessTimeout)
	defer cancel()
	res := readiness{Status: "ready", Checks: make(map[string]checkResult, len(checks))}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range checks {
		if c.optional && !optional {
			continue
		}
		wg.Go(func() {
			start := time.Now()
			detail, err := c.check(ctx)
			cr := checkResult{Status: "ok", Optional: c.optional, Detail: detail, DurationMS: durationMS(time.Since(start))}
			if err != nil {
				cr.Status, cr.Error = "failing", publicCheckError(err)
				if !c.optional && !errors.Is(err, errSaturated) {
					ev := s.log.Warn().Err(err).Str("check", c.name)
					if r != nil {
						ev = ev.Str("request_id", requestID(r))
					}
					ev.Msg("readiness check failed")
				}
			}
			mu.Lock()
			res.Checks[c.name] = cr
			if err != nil && !c.optional {
				res.Status = "not ready"
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return res
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

// readinessFigures runs every check for the metrics.
func (s *Server) readinessFigures() []metrics.Check {
	res := s.runChecks(nil, s.readinessChecks(), true)
	out := make([]metrics.Check, 0, len(res.Checks))
	for name, c := range res.Checks {
		out = append(out, metrics.Check{Name: name, OK: c.Status == "ok", Optional: c.Optional})
	}
	slices.SortFunc(out, func(a, b metrics.Check) int { return strings.Compare(a.Name, b.Name) })
	return out
}
