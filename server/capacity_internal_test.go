package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/rs/zerolog"
)

// newInternalServer is a Server on a temporary data directory with cheap hashing;
// edit adjusts the config. Its indexes are checked at cleanup.
func newInternalServer(t *testing.T, edit func(*Config)) *Server {
	t.Helper()
	cfg := Config{DataDir: t.TempDir(), Logger: zerolog.Nop(), Argon2: internalArgon2}
	if edit != nil {
		edit(&cfg)
	}
	s, err := newForTest(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.store.CheckIndexes(); err != nil {
			t.Errorf("index check: %v", err)
		}
		s.Close()
	})
	return s
}

// gate holds handlers until released and counts those inside.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) handler(then func(w http.ResponseWriter, r *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if then != nil {
			then(w, r)
		}
		g.entered <- struct{}{}
		<-g.release
		w.WriteHeader(http.StatusNoContent)
	})
}

// readyzOf calls /readyz's handler and decodes the answer.
func readyzOf(t *testing.T, s *Server) (int, map[string]string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	var doc readiness
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("readyz body %q: %v", rec.Body, err)
	}
	checks := map[string]string{"": doc.Status}
	for name, c := range doc.Checks {
		checks[name] = c.Status + ": " + c.Detail
	}
	return rec.Code, checks
}

// TestRequestSlotCap: with every slot taken by a handler at work, the next request is
// 503 at once with Retry-After, /healthz still answers and /readyz says why it fails.
func TestRequestSlotCap(t *testing.T) {
	s := newInternalServer(t, func(c *Config) { c.MaxConcurrent = 2 })
	g := newGate()
	h := s.observe(s.bufferBody(s.requestSlot(g.handler(nil))))

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/work", strings.NewReader("{}")))
		})
		<-g.entered
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/work", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("third request: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	code, checks := readyzOf(t, s)
	if code != http.StatusServiceUnavailable || checks[""] != "not ready" || checks["requests"] != "failing: 2 of 2 request slots in use" {
		t.Fatalf("readyz while saturated: %d %v", code, checks)
	}
	live := httptest.NewRecorder()
	s.Handler().ServeHTTP(live, httptest.NewRequest("HEAD", "/healthz", nil))
	if live.Code != http.StatusOK {
		t.Fatalf("healthz while saturated: %d", live.Code)
	}

	close(g.release)
	wg.Wait()
	if code, checks := readyzOf(t, s); code != http.StatusOK || checks["requests"] != "ok: 0 of 2 request slots in use" {
		t.Fatalf("readyz after: %d %v", code, checks)
	}
}

// TestReleaseSlot: a handler that only sends what is left gives its slot back.
func TestReleaseSlot(t *testing.T) {
	s := newInternalServer(t, func(c *Config) { c.MaxConcurrent = 1 })
	g := newGate()
	h := s.observe(s.requestSlot(g.handler(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/download" {
			s.releaseSlot(r)
			s.releaseSlot(r) // twice is harmless
		}
	})))
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/download", nil)); close(done) }()
	<-g.entered
	if n := len(s.cap.slots); n != 0 {
		t.Fatalf("%d slots held by a released download", n)
	}
	go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/work", nil))
	<-g.entered // it got the slot
	close(g.release)
	<-done
}

// TestBodyBudget: bodies read ahead of a slot share a budget; beyond it 503, and what
// they took is given back.
func TestBodyBudget(t *testing.T) {
	s := newInternalServer(t, func(c *Config) { c.BodyBufferBytes = 4 << 10 })
	var got []byte
	h := s.observe(s.bufferBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
	})))
	for _, tc := range []struct {
		name     string
		body     string
		declared bool
		want     int
	}{
		{"small", `{"a":1}`, true, http.StatusOK},
		{"small, chunked", `{"a":1}`, false, http.StatusOK},
		{"3 KiB, chunked", strings.Repeat("x", 3<<10), false, http.StatusOK},
		{"over the budget", strings.Repeat("x", 5<<10), true, http.StatusServiceUnavailable},
		{"over the budget, chunked", strings.Repeat("x", 5<<10), false, http.StatusServiceUnavailable},
		{"broken connection", "", false, http.StatusBadRequest},
	} {
		got = nil
		var body io.Reader = strings.NewReader(tc.body)
		if tc.name == "broken connection" {
			body = iotest.ErrReader(errors.New("connection reset by peer"))
		}
		req := httptest.NewRequest("POST", "/x", io.MultiReader(body))
		if tc.declared {
			req.ContentLength = int64(len(tc.body))
		} else {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.want)
		}
		if tc.want == http.StatusOK && string(got) != tc.body {
			t.Errorf("%s: the handler read %d bytes, want %d", tc.name, len(got), len(tc.body))
		}
		if used := s.cap.bodies.used.Load(); used != 0 {
			t.Errorf("%s: %d bytes still charged", tc.name, used)
		}
	}
}
