package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/store"
)

// reqInfo travels in the request context; auth fills in the user for the access log.
type reqInfo struct {
	id     string
	userID uint64
	user   *store.User
	// route is the route that handled the request (nil when none did: an unknown
	// path, a refused method), for logs and metrics.
	route *routeTag
	// adminSocket marks requests of the CLI's socket.
	adminSocket bool
	// slot is the request's hold on a request slot (requestSlot, releaseSlot); nil
	// when it never took one.
	slot *slotHold
}

// Constant header values, shared so hot paths do not allocate a slice per header.
var (
	headerNoStore    = []string{"no-store"}
	headerNosniff    = []string{"nosniff"}
	headerNoReferrer = []string{"no-referrer"}
	headerDeny       = []string{"DENY"}
	headerJSON       = []string{"application/json; charset=utf-8"}
)

type ctxKey int

const reqInfoKey ctxKey = iota

func infoOf(r *http.Request) *reqInfo {
	ri, _ := r.Context().Value(reqInfoKey).(*reqInfo)
	return ri
}

func requestID(r *http.Request) string {
	if ri := infoOf(r); ri != nil {
		return ri.id
	}
	return ""
}

// validRequestID accepts short printable ids from clients; anything else is replaced so
// logs cannot be forged or flooded.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter records status and size for the access log and keeps Flush reachable.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// reqState is everything observe keeps per request, allocated once.
type reqState struct {
	statusWriter
	info     reqInfo
	idHeader [1]string
}

// observe assigns the request id, recovers panics and writes one access-log line per
// request. Tokens and bodies are never logged.
func (s *Server) observe(next http.Handler) http.Handler {
	epoch := time.Now() // durations read only the monotonic clock (time.Since)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Since(epoch)
		st := &reqState{statusWriter: statusWriter{ResponseWriter: w}}
		ri, sw := &st.info, &st.statusWriter
		ri.id = r.Header.Get("X-Request-Id")
		if !validRequestID(ri.id) {
			ri.id = newRequestID()
		}
		st.idHeader[0] = ri.id
		w.Header()["X-Request-Id"] = st.idHeader[:]
		r = r.WithContext(context.WithValue(r.Context(), reqInfoKey, ri))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error().Interface("panic", p).Str("request_id", ri.id).Str("path", r.URL.Path).
					Str("stack", string(debug.Stack())).Msg("handler panicked")
				if sw.status == 0 {
					// Not writeError: the panic is logged above, with its stack.
					p := newProblem(http.StatusInternalServerError, internalDetail, nil)
					p.RequestID = ri.id
					writeProblem(sw, p)
				}
			}
			elapsed := time.Since(epoch) - start
			s.accessLog(r, ri, sw, elapsed)
			s.observeMetrics(r, ri, sw.status, elapsed)
		}()
		next.ServeHTTP(sw, r)
	})
}

// maxUserAgent bounds the user agent kept in a log line.
const maxUserAgent = 256

// accessLog writes the request's line: errors (5xx) at error level, the rest at info.
// duration_ms is a float in milliseconds; client is the address the login limits use.
func (s *Server) accessLog(r *http.Request, ri *reqInfo, sw *statusWriter, elapsed time.Duration) {
	ev := s.log.Info()
	if sw.status >= 500 {
		ev = s.log.Error()
	}
	if !ev.Enabled() {
		return
	}
	ua := r.UserAgent()
	if len(ua) > maxUserAgent {
		ua = ua[:maxUserAgent]
	}
	if ri.route != nil {
		ev.Str("route", ri.route.pattern)
	}
	var client [64]byte // an address in text, without allocating
	ev.Str("method", r.Method).Str("path", r.URL.Path).Int("status", sw.status).
		Int64("bytes", sw.bytes).Float64("duration_ms", durationMS(elapsed)).
		Bytes("client", clientAddr(r, s.cfg.TrustProxy).AppendTo(client[:0])).Str("user_agent", ua).
		Str("request_id", ri.id).Uint64("user_id", ri.userID).Msg("request")
}

// durationMS is d in milliseconds, the unit of every duration_ms log field.
func durationMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// withRoute records the matched route in the request's info.
func withRoute(tag *routeTag, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ri := infoOf(r); ri != nil {
			ri.route = tag
		}
		next.ServeHTTP(w, r)
	})
}

// cors answers preflights and marks responses readable by the configured browser
// origins. With none configured it adds nothing: only pages of the server's own
// origin (the built-in web app) can read answers, so a page a farm worker happens to
// open cannot drive a LAN-only server. Tokens travel in a header, not cookies, so
// credentials are never allowed.
func (s *Server) cors(next http.Handler) http.Handler {
	anyOrigin := false
	allowed := map[string]bool{}
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" {
			anyOrigin = true
		}
		allowed[strings.TrimSuffix(o, "/")] = true
	}
	none := !anyOrigin && len(allowed) == 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["X-Content-Type-Options"] = headerNosniff
		h["Referrer-Policy"] = headerNoReferrer
		h["X-Frame-Options"] = headerDeny
		origin := r.Header.Get("Origin")
		if origin == "" || none {
			next.ServeHTTP(w, r)
			return
		}
		h.Add("Vary", "Origin")
		if !anyOrigin && !allowed[origin] {
			next.ServeHTTP(w, r)
			return
		}
		if anyOrigin {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", origin)
		}
		h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After, WWW-Authenticate, Idempotent-Replayed")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id, Idempotency-Key")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitBody caps the request body; reading past it yields *http.MaxBytesError → 413.
// A declared length over the limit is refused with that same error before reading.
// The body must also keep pace (paceBody), or reading it fails with 408.
func (s *Server) limitBody(n int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > n {
			s.writeError(w, r, &http.MaxBytesError{Limit: n})
			return
		}
		s.paceBody(w, r)
		r.Body = http.MaxBytesReader(w, r.Body, n)
		next.ServeHTTP(w, r)
	})
}

// newStdLogger routes net/http's internal messages (TLS handshakes, …) to zerolog.
func newStdLogger(l zerolog.Logger) *log.Logger {
	return log.New(l.With().Str("component", "http").Logger(), "", 0)
}

// headOnly serves HEAD with the GET handler: net/http sends the headers and drops the
// body, and the request's context ends once the headers are written, so that a
// streaming handler (beds, backup) stops instead of producing a body nobody reads.
func headOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		next.ServeHTTP(&headWriter{ResponseWriter: w, cancel: cancel}, r.WithContext(ctx))
	})
}

type headWriter struct {
	http.ResponseWriter
	cancel context.CancelFunc
}

func (w *headWriter) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if code >= 200 {
		w.cancel()
	}
}

func (w *headWriter) Write(b []byte) (int, error) {
	// Passed on: net/http counts a small body for Content-Length and discards it.
	n, err := w.ResponseWriter.Write(b)
	w.cancel()
	return n, err
}

func (w *headWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// checkCORSOrigins accepts "*" and origins as browsers send them: scheme://host[:port].
func checkCORSOrigins(origins []string) error {
	for _, o := range origins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(strings.TrimSuffix(o, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return fmt.Errorf("CORS origin %q: give scheme://host[:port] (e.g. https://plantmap.example.org), or * for any origin", o)
		}
	}
	return nil
}
