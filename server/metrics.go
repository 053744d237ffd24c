package server

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/gardend/gardend/server/metrics"
)

// Metrics are served on the admin socket (GET /metrics, for `curl --unix-socket`) and,
// with Config.MetricsAddr, on a listener of their own for Prometheus, but never on
// the public listener: they show the traffic and the load of every route, which is
// no business of a garden's users, and a separate address lets the operator keep it
// on loopback or a management network (and IPAddressAllow= in the unit) without a
// token to manage.

// routeTag is what the access log and the metrics know of the route that took a
// request, made once per route when the handler is built.
type routeTag struct {
	pattern string // in OpenAPI syntax ({company_id}), as logged and as the metrics label it
	metrics *metrics.Route
	login   bool // POST /login, also counted by outcome
}

// newRouteTag resolves the instruments of method and pattern.
func (s *Server) newRouteTag(method, pattern string) *routeTag {
	return &routeTag{
		pattern: openAPIPath(pattern),
		metrics: s.metrics.Route(method, openAPIPath(pattern)),
		login:   method == http.MethodPost && pattern == "/login",
	}
}

// observeMetrics records one answered request.
func (s *Server) observeMetrics(r *http.Request, ri *reqInfo, status int, d time.Duration) {
	if s.metrics == nil || ri.adminSocket {
		return
	}
	if ri.route == nil {
		s.metrics.Unmatched(r.Method).Observe(status, d)
		return
	}
	ri.route.metrics.Observe(status, d)
	if ri.route.login {
		s.metrics.ObserveLogin(status)
	}
}

// metricSources connects what is read at each scrape.
func (s *Server) metricSources() metrics.Sources {
	src := metrics.Sources{Hashing: s.pw.Queue, Capacity: s.capacityFigures, Readiness: s.readinessFigures, Tiles: s.tiles.Counts}
	if s.spatial != nil {
		src.SpatialCache = func() (int64, int64) {
			st := s.spatial.Stats()
			return st.CacheHits, st.Collapsed
		}
	}
	if s.recorder != nil && s.reader != nil {
		src.History = func() metrics.History {
			rs, cs := s.reader.Stats(), s.recorder.Stats()
			return metrics.History{Holding: rs.Holding, BedsRead: rs.Read, BedsFailed: rs.Failed,
				Recorded: cs.Recorded, Skipped: cs.Skipped, BedPoints: cs.BedPoints, PlantPoints: cs.PlantPoints,
				Raised: cs.Raised, Closed: cs.Closed}
		}
	}
	if s.clouds != nil {
		src.CloudQueue = func() (pending, failed, inFlight int, err error) {
			pending, failed, err = s.store.CloudQueueCounts()
			return pending, failed, s.clouds.InHand(), err
		}
	}
	return src
}

// metricsHandler serves GET /metrics and nothing else.
func (s *Server) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler())
	return mux
}

// serveMetrics serves the metrics listener until ctx ends.
func (s *Server) serveMetrics(ctx context.Context, ln net.Listener) {
	hs := &http.Server{
		Handler:           s.metricsHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          newStdLogger(s.log),
	}
	s.log.Info().Str("addr", ln.Addr().String()).Msg("metrics listening (GET /metrics)")
	if err := serveUntilDone(ctx, hs, ln); err != nil {
		s.log.Error().Err(err).Msg("metrics listener")
	}
}

// MetricsAddr is the metrics listener's address once Run listens ("" without one).
func (s *Server) MetricsAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metricsAddr
}
