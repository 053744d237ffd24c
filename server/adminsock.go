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

	"github.com/gardend/gardend/store"
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
		_ = ln.Close() // the chmod error is the one to report
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
	_ = os.Remove(AdminSocketPath(s.cfg.DataDir)) // a stale socket is removed at the next start
}

// serveUntilDone serves hs on ln until ctx ends, then shuts it down, waiting at most
// 5 s for requests in flight; an error other than the shutdown is returned.
func serveUntilDone(ctx context.Context, hs *http.Server, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shut) // past 5 s, what is in flight ends with the process
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// adminHandler serves POST /ops/<name> with the JSON arguments as the body, and the
// operator's diagnostics: GET /metrics, GET /readyz with every check's figures, and
// Go's profiler under /debug/pprof/ (never on the public listener: profiles show
// memory and code paths, and cost CPU).
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
		if r.URL.Path == "/readyz" && r.Method == http.MethodGet {
			s.handleReadyDetail(w, r) // with the figures the public /readyz leaves out
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, "/ops/")
		op, known := adminSocketOps[name]
		switch {
		case !ok || r.Method != http.MethodPost:
			s.writeError(w, r, notFound("admin socket: POST /ops/<operation>"))
			return
		case !known:
			s.writeError(w, r, fmt.Errorf("%w: unknown admin operation %q", store.ErrNotFound, name))
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
		op(s, w, r, args)
	}))
}

// AdminErrorTrailer carries, on the admin socket, a failure that happened after the
// 200 and part of the answer (a download, or answers of a series) were sent.
const AdminErrorTrailer = "Gardend-Admin-Error"

// socketOp serves one operation on the admin socket, its JSON arguments read.
type socketOp func(s *Server, w http.ResponseWriter, r *http.Request, args []byte)

// adminSocketOps are the operations the admin socket serves, by name.
var adminSocketOps = socketOps(
	valueOp[UsersCreate](), valueOp[UsersResetPassword](), valueOp[BedsAdd](), valueOp[BedsRemove](),
	valueOp[InspectUsers](), valueOp[InspectTokens](), valueOp[InspectStats](),
	valueOp[InspectCompanies](), valueOp[InspectGardens](), valueOp[InspectPermissions](),
	valueOp[InspectBeds](), valueOp[InspectQueue](),
	valueOp[InspectLogs](), valueOp[InspectPhotos](),
	valueOp[PointCloudsSync](), downloadOp[BackupCreate](),
	valueOp[SyncStatus](),
)

type namedOp struct {
	name  string
	serve socketOp
}

func socketOps(ops ...namedOp) map[string]socketOp {
	m := make(map[string]socketOp, len(ops))
	for _, op := range ops {
		m[op.name] = op.serve
	}
	return m
}

// valueOp serves an operation that answers Resp values: NDJSON, one line per answer,
// each flushed as it is ready. A failure before the first answer is a problem
// answer; after it, a trailer.
func valueOp[Req AdminOp[Resp], Resp any]() namedOp {
	var zero Req
	return namedOp{name: zero.OpName(), serve: func(s *Server, w http.ResponseWriter, r *http.Request, args []byte) {
		var op Req
		if err := decodeArgs(args, &op); err != nil {
			s.writeError(w, r, err)
			return
		}
		rc := http.NewResponseController(w)
		answered := false
		var line []byte
		err := op.run(r.Context(), s.admin, func(v Resp) (err error) {
			if line, err = appendJSONLine(line[:0], v); err != nil {
				return err
			}
			if !answered {
				answered = true
				w.Header().Set("Content-Type", "application/x-ndjson")
				w.WriteHeader(http.StatusOK)
			}
			if _, err := w.Write(line); err != nil {
				return err
			}
			return rc.Flush()
		})
		switch {
		case err != nil && answered:
			w.Header().Set(http.TrailerPrefix+AdminErrorTrailer, oneLine(err.Error()))
		case err != nil:
			s.writeError(w, r, err)
		case !answered:
			s.writeError(w, r, fmt.Errorf("admin operation %s ended without an answer", zero.OpName()))
		}
	}}
}

// downloadOp serves an operation that answers a byte stream.
func downloadOp[Req AdminDownload]() namedOp {
	var zero Req
	return namedOp{name: zero.OpName(), serve: func(s *Server, w http.ResponseWriter, r *http.Request, args []byte) {
		var op Req
		if err := decodeArgs(args, &op); err != nil {
			s.writeError(w, r, err)
			return
		}
		write, err := op.start(r.Context(), s.admin)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", op.MediaType())
		sendDownload(w, op.OpName(), write)
	}}
}

// sendDownload writes a download's stream. Once bytes are out, a failure can only
// travel in a trailer (the CLI also finds the stream cut short); before that, it is a
// problem answer with its cause: the admin socket is the operator's own.
func sendDownload(w http.ResponseWriter, name string, write func(io.Writer) error) {
	cw := &countingWriter{w: w}
	err := write(cw)
	switch {
	case err == nil:
	case cw.n == 0:
		w.Header().Del("Content-Type")
		writeProblem(w, newProblem(http.StatusInternalServerError, name+" failed: "+err.Error(), nil))
	default:
		w.Header().Set(http.TrailerPrefix+AdminErrorTrailer, oneLine(err.Error()))
	}
}
