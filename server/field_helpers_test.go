package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// fieldArgon2 is cheap enough for hundreds of logins per test.
var fieldArgon2 = store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}

// fieldClock is a settable clock for Config.Now.
type fieldClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFieldClock() *fieldClock {
	return &fieldClock{now: time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)}
}

func (c *fieldClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fieldClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fieldNewServer opens a server on a temp directory with cheap hashing and the given
// clock (nil: a fresh fieldClock); edit adjusts the Config first.
func fieldNewServer(t testing.TB, clock *fieldClock, edit func(*server.Config)) *server.Server {
	t.Helper()
	if clock == nil {
		clock = newFieldClock()
	}
	cfg := server.Config{
		DataDir: t.TempDir(),
		Argon2:  fieldArgon2,
		Now:     clock.Now,
		Logger:  zerolog.Nop(),
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := newServer(t, cfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// fieldCreateUser creates a normal user through the admin operation the CLI uses.
func fieldCreateUser(t testing.TB, srv *server.Server, username, password string) {
	t.Helper()
	admin := server.NewAdmin(srv.Store(), store.NewPasswords(fieldArgon2, 1), t.TempDir())
	op := server.UsersCreate{Username: username, Password: password, FirstName: "F", LastName: "L"}
	if err := server.RunAdmin(context.Background(), admin, op, func(store.User) error { return nil }); err != nil {
		t.Fatalf("create user %s: %v", username, err)
	}
}

// fieldRequest is one request through h; remote sets RemoteAddr ("" keeps httptest's).
type fieldRequest struct {
	method, path, body string
	remote             string
	header             map[string]string
}

func fieldDo(t testing.TB, h http.Handler, fr fieldRequest) *httptest.ResponseRecorder {
	t.Helper()
	var body io.Reader
	if fr.body != "" {
		body = strings.NewReader(fr.body)
	}
	req := httptest.NewRequest(fr.method, fr.path, body)
	if fr.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range fr.header {
		req.Header.Set(k, v)
	}
	if fr.remote != "" {
		req.RemoteAddr = fr.remote
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// fieldLogin posts JSON credentials from the remote address.
func fieldLogin(t testing.TB, h http.Handler, username, password, remote string) *httptest.ResponseRecorder {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"username": username, "password": password})
	return fieldDo(t, h, fieldRequest{method: "POST", path: "/login", body: string(body), remote: remote})
}

// fieldProblem decodes a problem+json answer and checks its status and media type.
func fieldProblem(t testing.TB, rec *httptest.ResponseRecorder, status int) map[string]any {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body %q: %v", rec.Body, err)
	}
	if p["status"] != float64(status) {
		t.Fatalf("problem status %v, want %d", p["status"], status)
	}
	return p
}

// fieldStatus fails unless rec has the status.
func fieldStatus(t testing.TB, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body)
	}
}
