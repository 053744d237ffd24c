package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// AdminSocketName is the CLI's Unix socket inside the data directory.
const AdminSocketName = "admin.sock"

// AdminSocketPath is where serve listens for the CLI.
func AdminSocketPath(dataDir string) string { return filepath.Join(dataDir, AdminSocketName) }

func (s *Server) listenAdmin() (net.Listener, error) {
	path := AdminSocketPath(s.cfg.DataDir)
	// We hold the database lock, so a socket file left here is from a dead process.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale admin socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	// Only the owner of the data directory may drive the CLI through it.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin socket permissions: %w", err)
	}
	return ln, nil
}

func (s *Server) serveAdmin(ctx context.Context, ln net.Listener) {
	hs := &http.Server{
		Handler:           s.adminHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          newStdLogger(s.log),
	}
	if err := serveUntilDone(ctx, hs, ln); err != nil {
		s.log.Error().Err(err).Msg("admin socket")
	}
	os.Remove(AdminSocketPath(s.cfg.DataDir))
}

// serveUntilDone serves hs on ln until ctx ends, then shuts it down, waiting at most
// 5 s for requests in flight; an error other than the shutdown is returned.
func serveUntilDone(ctx context.Context, hs *http.Server, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shut)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// adminHandler serves POST /ops/<name> with the JSON arguments as the body, and the
// operator's diagnostics: GET /metrics and Go's profiler under /debug/pprof/ (never on
// the public listener: profiles show memory and code paths, and cost CPU).
func (s *Server) adminHandler() http.Handler {
	diag := http.NewServeMux()
	diag.Handle("GET /metrics", s.metrics.Handler())
	diag.HandleFunc("GET /debug/pprof/", pprof.Index)
	diag.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	diag.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	diag.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	diag.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	diag.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return s.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ri := infoOf(r); ri != nil {
			ri.adminSocket = true // not the API's traffic: no request metrics
		}
		if r.URL.Path == "/metrics" || strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			diag.ServeHTTP(w, r)
			return
		}
		op, ok := strings.CutPrefix(r.URL.Path, "/ops/")
		if !ok || r.Method != http.MethodPost {
			s.writeError(w, r, notFound("admin socket: POST /ops/<operation>"))
			return
		}
		args, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if len(args) == 0 {
			args = []byte("{}")
		}
		res, err := s.admin.Do(r.Context(), op, args)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if h, ok := res.(StreamResult); ok {
			h(w)
			return
		}
		s.writeJSON(w, r, http.StatusOK, res)
	}))
}

// StreamResult lets an admin operation stream its answer (a backup) instead of JSON.
type StreamResult func(w io.Writer)
