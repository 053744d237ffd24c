package server

import (
	"net/http"
	"time"
)

// capConcurrency answers 503 at once when MaxConcurrent requests are already in
// flight: queueing would only turn overload into timeouts and memory growth. /healthz
// stays exempt so a supervisor does not restart a server that is merely busy.
func (s *Server) capConcurrency(next http.Handler) http.Handler {
	slots := make(chan struct{}, s.cfg.MaxConcurrent)
	busy := &apiError{status: http.StatusServiceUnavailable, retryAfter: time.Second,
		detail: "the server is at its limit of concurrent requests; retry shortly"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			next.ServeHTTP(w, r)
		default:
			s.writeError(w, r, busy)
		}
	})
}
