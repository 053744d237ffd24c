package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/store"
)

var internalArgon2 = store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}

// newInternalServer is a server on a temporary data directory with cheap hashing;
// edit adjusts the config and the server before it handles a request.
func newInternalServer(t *testing.T, edit func(*Server)) *Server {
	t.Helper()
	s, err := New(Config{DataDir: t.TempDir(), Argon2: internalArgon2, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.store.CheckIndexes(); err != nil {
			t.Errorf("index check: %v", err)
		}
		s.Close()
	})
	if edit != nil {
		edit(s)
	}
	return s
}

func (s *Server) createTestUser(t *testing.T, username, password string) {
	t.Helper()
	args, _ := json.Marshal(CreateUserArgs{Username: username, Password: password, FirstName: "F", LastName: "L"})
	if _, err := s.admin.Do(context.Background(), "users.create", args); err != nil {
		t.Fatal(err)
	}
}

// call sends a JSON request through the whole handler.
func (s *Server) call(method, path, token, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

func (s *Server) loginBody(username, password string) string {
	b, _ := json.Marshal(map[string]string{"username": username, "password": password})
	return string(b)
}

// heldLogins stops the first n logins that verified their password until release.
type heldLogins struct {
	mu      sync.Mutex
	n       int
	arrived chan struct{}
	release chan struct{}
}

func holdLogins(s *Server, n int) *heldLogins {
	h := &heldLogins{n: n, arrived: make(chan struct{}, n), release: make(chan struct{})}
	s.hooks.verified = func(string) {
		h.mu.Lock()
		hold := h.n > 0
		h.n--
		h.mu.Unlock()
		if hold {
			h.arrived <- struct{}{}
			<-h.release
		}
	}
	return h
}

// Logins that checked the old password before a password change (or before a logout
// everywhere) and create their token after it must get no token: the change revokes
// every other session, including the ones being created.
func TestLoginsInFlightLoseToCredentialChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(s *Server, token string) *httptest.ResponseRecorder
		// password that logs in after the change
		after string
	}{
		{"password change", func(s *Server, token string) *httptest.ResponseRecorder {
			return s.call("PUT", "/user", token, `{"password":"new-secret-77"}`)
		}, "new-secret-77"},
		{"logout everywhere", func(s *Server, token string) *httptest.ResponseRecorder {
			return s.call("POST", "/logoutall", token, "")
		}, "old-secret-77"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const inFlight = 3
			s := newInternalServer(t, nil)
			s.createTestUser(t, "ann", "old-secret-77")
			var own loginResult
			json.Unmarshal(s.call("POST", "/login", "", s.loginBody("ann", "old-secret-77")).Body.Bytes(), &own)
			held := holdLogins(s, inFlight)

			codes := make(chan *httptest.ResponseRecorder, inFlight)
			for range inFlight {
				go func() { codes <- s.call("POST", "/login", "", s.loginBody("ann", "old-secret-77")) }()
			}
			for range inFlight {
				<-held.arrived
			}
			if rec := tc.change(s, own.Token); rec.Code != http.StatusOK {
				t.Fatalf("change: %d %s", rec.Code, rec.Body)
			}
			close(held.release)
			for range inFlight {
				rec := <-codes
				if rec.Code != http.StatusBadRequest {
					t.Errorf("login checked before the change: %d %s, want 400", rec.Code, rec.Body)
				}
				var res loginResult
				if json.Unmarshal(rec.Body.Bytes(), &res) == nil && res.Token != "" {
					if got := s.call("GET", "/user", res.Token, ""); got.Code == http.StatusOK {
						t.Errorf("a token issued after the change works")
					}
				}
			}
			toks, err := s.store.ListTokens()
			if err != nil {
				t.Fatal(err)
			}
			wantTokens := 0
			if tc.name == "password change" {
				wantTokens = 1 // the caller's own
			}
			if len(toks) != wantTokens {
				t.Fatalf("%d tokens stored after the change, want %d: %v", len(toks), wantTokens, toks)
			}
			// Logins that start after the change behave as usual.
			if rec := s.call("POST", "/login", "", s.loginBody("ann", tc.after)); rec.Code != http.StatusOK {
				t.Fatalf("login after the change: %d %s", rec.Code, rec.Body)
			}
		})
	}
}

// A login that checked its password while a different field changed (a name) still
// gets its token: only credentials matter.
func TestLoginInFlightSurvivesProfileChange(t *testing.T) {
	s := newInternalServer(t, nil)
	s.createTestUser(t, "ann", "old-secret-77")
	var own loginResult
	json.Unmarshal(s.call("POST", "/login", "", s.loginBody("ann", "old-secret-77")).Body.Bytes(), &own)
	held := holdLogins(s, 1)
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- s.call("POST", "/login", "", s.loginBody("ann", "old-secret-77")) }()
	<-held.arrived
	if rec := s.call("PUT", "/user", own.Token, `{"first_name":"Annie"}`); rec.Code != http.StatusOK {
		t.Fatalf("rename: %d %s", rec.Code, rec.Body)
	}
	close(held.release)
	if rec := <-done; rec.Code != http.StatusOK {
		t.Fatalf("login: %d %s", rec.Code, rec.Body)
	}
}
