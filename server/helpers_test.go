package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// testServer is a real server (bbolt file, image directory) in a temporary data
// directory, driven through its whole HTTP stack without a listener.
type testServer struct {
	tb      testing.TB
	cfg     server.Config
	backend backend
	srv     *server.Server
}

// newTestServer starts a server on a fresh data directory and its bbolt file;
// configure adjusts the config first. At cleanup the database must pass the storage
// and the index check.
func newTestServer(tb testing.TB, configure ...func(*server.Config)) *testServer {
	tb.Helper()
	return newTestServerOn(tb, boltBackend, configure...)
}

// newTestServerOn is newTestServer on the backend b.
func newTestServerOn(tb testing.TB, b backend, configure ...func(*server.Config)) *testServer {
	tb.Helper()
	cfg := server.Config{DataDir: tb.TempDir(), Argon2: cheapArgon2}
	for _, f := range configure {
		f(&cfg)
	}
	ts := &testServer{tb: tb, cfg: cfg, backend: b}
	ts.start()
	tb.Cleanup(func() { ts.stop() })
	return ts
}

// start opens the store and starts the server on it.
func (ts *testServer) start() {
	ts.tb.Helper()
	srv, err := newServerOn(ts.tb, ts.backend, ts.cfg)
	if err != nil {
		ts.tb.Fatal(err)
	}
	ts.srv = srv
}

// stop checks and closes the database; a stopped server can be started again on the
// same data directory with start.
func (ts *testServer) stop() {
	ts.tb.Helper()
	if ts.srv == nil {
		return
	}
	st := ts.srv.Store()
	if err := st.Check(); err != nil {
		ts.tb.Errorf("storage check: %v", err)
	}
	if err := st.CheckIndexes(); err != nil {
		ts.tb.Errorf("index check: %v", err)
	}
	ts.srv.Close()
	ts.srv = nil
}

// restart simulates a process restart on the same data directory.
func (ts *testServer) restart() {
	ts.tb.Helper()
	ts.stop()
	ts.start()
}

func (ts *testServer) store() store.Backend { return ts.srv.Store() }

type response struct {
	code   int
	header http.Header
	body   []byte
}

// do sends one request. body is nil (none), a string or []byte (sent as is) or any
// other value (sent as JSON). An empty token sends no Authorization header.
func (ts *testServer) do(method, path, token string, body any) response {
	ts.tb.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			ts.tb.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req := httptest.NewRequestWithContext(context.Background(), method, path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	rec := httptest.NewRecorder()
	ts.srv.Handler().ServeHTTP(rec, req)
	return response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// must sends a request and fails the test unless the status is want.
func (ts *testServer) must(want int, method, path, token string, body any) response {
	ts.tb.Helper()
	res := ts.do(method, path, token, body)
	if res.code != want {
		ts.tb.Fatalf("%s %s: status %d, want %d; body %s", method, path, res.code, want, res.body)
	}
	return res
}

// decode unmarshals the body into v.
func (r response) decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		tb.Fatalf("decode %s: %v", r.body, err)
	}
}

// problem is the error body of a response.
func (r response) problem(tb testing.TB) (detail string, fields map[string]string) {
	tb.Helper()
	var p struct {
		Detail string            `json:"detail"`
		Errors map[string]string `json:"errors"`
	}
	r.decode(tb, &p)
	return p.Detail, p.Errors
}

// register creates a user through the API and returns its token.
func (ts *testServer) register(username string) string {
	ts.tb.Helper()
	var res struct{ Token string }
	ts.must(http.StatusCreated, "POST", "/register", "", map[string]string{
		"username": username, "password": "pw-of-" + username, "first_name": "First", "last_name": "Last",
	}).decode(ts.tb, &res)
	return res.Token
}

// siteAdmin creates a site administrator (as the CLI does) and logs it in.
func (ts *testServer) siteAdmin(username string) string {
	ts.tb.Helper()
	hash, err := store.NewPasswords(cheapArgon2, 1).Hash(context.Background(), "pw-of-"+username)
	if err != nil {
		ts.tb.Fatal(err)
	}
	if _, err := ts.store().CreateUser(store.NewUser{Username: username, FirstName: "Site", LastName: "Admin", PasswordHash: hash, SiteAdmin: true}); err != nil {
		ts.tb.Fatal(err)
	}
	var res struct{ Token string }
	ts.must(http.StatusOK, "POST", "/login", "", map[string]string{"username": username, "password": "pw-of-" + username}).decode(ts.tb, &res)
	return res.Token
}

func (ts *testServer) userID(username string) uint64 {
	ts.tb.Helper()
	u, err := ts.store().UserByUsername(username)
	if err != nil {
		ts.tb.Fatal(err)
	}
	return u.ID
}

// createCompany creates a company through the API as the token's user.
func (ts *testServer) createCompany(token, name string) store.Company {
	ts.tb.Helper()
	var c store.Company
	ts.must(http.StatusCreated, "POST", "/companies", token, map[string]string{"name": name}).decode(ts.tb, &c)
	return c
}

// createGarden creates a garden of the company through the API.
func (ts *testServer) createGarden(token string, companyID uint64, name string) store.Garden {
	ts.tb.Helper()
	var g store.Garden
	ts.must(http.StatusCreated, "POST", companyPath(companyID)+"/gardens", token, map[string]string{"name": name}).decode(ts.tb, &g)
	return g
}

// grant sets a permission through the API: on the company when gardenID is 0.
func (ts *testServer) grant(token string, companyID, gardenID uint64, username string, level store.Level) {
	ts.tb.Helper()
	path := companyPath(companyID)
	if gardenID != 0 {
		path = gardenPath(companyID, gardenID)
	}
	ts.must(http.StatusCreated, "POST", path+"/createPermission", token, map[string]string{"username": username, "permission": string(level)})
}

func companyPath(c uint64) string { return "/companies/" + u64(c) }

func gardenPath(c, g uint64) string { return companyPath(c) + "/gardens/" + u64(g) }

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// keys returns the sorted key names of a JSON object body, to pin response shapes.
func keys(tb testing.TB, body []byte) string {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		tb.Fatalf("decode %s: %v", body, err)
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ",")
}
