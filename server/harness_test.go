package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// cheapArgon2 keeps tests fast; production cost is measured by BenchmarkLogin.
var cheapArgon2 = store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// harness is a whole server on a real database, driven through its handler.
type harness struct {
	t     testing.TB
	srv   *server.Server
	h     http.Handler
	clock *fakeClock
}

func newHarness(t testing.TB, mutate ...func(*server.Config)) *harness {
	t.Helper()
	return newHarnessOn(t, boltBackend, mutate...)
}

// newHarnessOn is newHarness on the backend b.
func newHarnessOn(t testing.TB, b backend, mutate ...func(*server.Config)) *harness {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}
	cfg := server.Config{DataDir: t.TempDir(), Argon2: cheapArgon2, Now: clock.Now}
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := newServerOn(t, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Store().Check(); err != nil {
			t.Errorf("consistency check: %v", err)
		}
		if err := srv.Store().CheckIndexes(); err != nil {
			t.Errorf("index check: %v", err)
		}
		srv.Close()
	})
	return &harness{t: t, srv: srv, h: srv.Handler(), clock: clock}
}

// recorded is a recorded answer with helpers for assertions.
type recorded struct {
	*httptest.ResponseRecorder
	t testing.TB
}

// do sends body (a string is sent raw, anything else as JSON) with an optional token.
func (h *harness) do(method, path, token string, body any, headers ...string) recorded {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.h.ServeHTTP(rec, req)
	return recorded{rec, h.t}
}

// json decodes the body into a generic value.
func (r recorded) json() map[string]any {
	r.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body.Bytes(), &m); err != nil {
		r.t.Fatalf("body %q: %v", r.Body.String(), err)
	}
	return m
}

func (r recorded) expect(status int) recorded {
	r.t.Helper()
	if r.Code != status {
		r.t.Fatalf("status %d, want %d; body %s", r.Code, status, r.Body.String())
	}
	return r
}

// expectProblem checks a problem+json answer and, when field is set, that it is named.
func (r recorded) expectProblem(status int, field string) map[string]any {
	r.t.Helper()
	r.expect(status)
	if ct := r.Header().Get("Content-Type"); ct != "application/problem+json" {
		r.t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	p := r.json()
	if p["status"] != float64(status) || p["title"] != http.StatusText(status) || p["detail"] == "" {
		r.t.Fatalf("problem body %v", p)
	}
	if field != "" {
		errs, _ := p["errors"].(map[string]any)
		if errs[field] == nil {
			r.t.Fatalf("problem does not name field %q: %v", field, p)
		}
	}
	return p
}

// register creates a user and returns its token.
func (h *harness) register(username string) string {
	h.t.Helper()
	res := h.do("POST", "/register", "", map[string]string{
		"username": username, "password": "pw-" + username + "-123", "first_name": "F", "last_name": "L",
	}).expect(http.StatusCreated)
	return res.json()["token"].(string)
}

func (h *harness) login(username, password string) recorded {
	h.t.Helper()
	return h.do("POST", "/login", "", map[string]string{"username": username, "password": password})
}
