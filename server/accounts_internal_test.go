package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

var internalArgon2 = store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}

func (s *Server) createTestUser(t *testing.T, username, password string) {
	t.Helper()
	op := UsersCreate{Username: username, Password: password, FirstName: "F", LastName: "L"}
	if err := RunAdmin(context.Background(), s.admin, op, func(store.User) error { return nil }); err != nil {
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

// loginFrom posts credentials from a client address.
func (s *Server) loginFrom(ctx context.Context, username, password, remote string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, "POST", "/login", strings.NewReader(s.loginBody(username, password)))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// Correct logins in flight are not failures: more of them at once than the failure
// limit, for one account or from one address (a farm office at 8 a.m.), all succeed.
// The first `limit` are held after their password check while the others arrive, so
// on the old code (which counted every attempt until it succeeded) they got 429.
func TestConcurrentCorrectLoginsAreNotRefused(t *testing.T) {
	const limit, extra = DefaultLoginFailLimit, 4
	for _, tc := range []struct {
		name string
		user func(i int) string
		addr func(i int) string
	}{
		{"one account from many addresses", func(int) string { return "ann" }, func(i int) string { return fmt.Sprintf("192.0.2.%d:1000", i+1) }},
		{"one account from one address", func(int) string { return "ann" }, func(int) string { return "192.0.2.1:1000" }},
		{"many accounts from one address", func(i int) string { return fmt.Sprintf("worker%d", i) }, func(int) string { return "198.51.100.7:4000" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newInternalServer(t, nil)
			for i := range limit + extra {
				if i == 0 || tc.user(i) != tc.user(0) {
					s.createTestUser(t, tc.user(i), "right-password-1")
				}
			}
			held := holdLogins(s, limit)
			waiting := make(chan struct{}, 64)
			s.logins.waiting = func() {
				select {
				case waiting <- struct{}{}:
				default:
				}
			}
			answers := make(chan *httptest.ResponseRecorder, limit+extra)
			for i := range limit + extra {
				go func() {
					answers <- s.loginFrom(context.Background(), tc.user(i), "right-password-1", tc.addr(i))
				}()
			}
			for range limit {
				<-held.arrived
			}
			// The others have arrived too: each is answered or waits for room.
			var got []*httptest.ResponseRecorder
			for arrived := 0; arrived < extra; arrived++ {
				select {
				case rec := <-answers:
					got = append(got, rec)
				case <-waiting:
				}
			}
			close(held.release)
			for len(got) < limit+extra {
				got = append(got, <-answers)
			}
			for _, rec := range got {
				if rec.Code != http.StatusOK {
					t.Errorf("correct login answered %d: %s", rec.Code, rec.Body)
				}
			}
			// Nothing was counted: a full allowance of failures is left.
			for i := range limit {
				if rec := s.loginFrom(context.Background(), tc.user(0), "wrong-password", tc.addr(0)); rec.Code != http.StatusBadRequest {
					t.Fatalf("failure %d after the burst: %d, want 400", i+1, rec.Code)
				}
			}
			if rec := s.loginFrom(context.Background(), tc.user(0), "wrong-password", tc.addr(0)); rec.Code != http.StatusTooManyRequests {
				t.Fatalf("failure beyond the limit: %d, want 429", rec.Code)
			}
		})
	}
}

// Logins given up before their password was checked (the client went away while it
// queued) count nothing, whether the password was right or wrong and whether the
// account exists: a second flood after an abandoned one is not refused.
func TestAbandonedLoginsDoNotCount(t *testing.T) {
	s := newInternalServer(t, nil)
	s.createTestUser(t, "ann", "right-password-1")
	const office = "192.0.2.9:1000"
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for range 3 * DefaultLoginFailLimit {
		for _, pw := range []string{"right-password-1", "wrong-password"} {
			for _, user := range []string{"ann", "nobody"} {
				if rec := s.loginFrom(gone, user, pw, office); rec.Code == http.StatusOK {
					t.Fatalf("a cancelled login of %s got a token", user)
				}
			}
		}
	}
	for i := range DefaultLoginFailLimit {
		if rec := s.loginFrom(context.Background(), "ann", "wrong-password", office); rec.Code != http.StatusBadRequest {
			t.Fatalf("failure %d after the abandoned flood: %d, want 400", i+1, rec.Code)
		}
	}
	if rec := s.loginFrom(context.Background(), "ann", "right-password-1", office); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("after the limit of checked failures: %d, want 429", rec.Code)
	}
}

// The flush of issue 8: failures of thousands of other usernames from other addresses
// fill the failure table, but the username locked out first stays locked out.
func TestLockedUsernameSurvivesTableFlush(t *testing.T) {
	const keys = 20
	s := newInternalServer(t, nil)
	s.logins = newLoginLimits(DefaultLoginFailLimit, time.Minute, keys, s.cfg.Now)
	s.createTestUser(t, "ann", "right-password-1")
	for i := range DefaultLoginFailLimit {
		s.loginFrom(context.Background(), "ann", "wrong-password", fmt.Sprintf("192.0.2.%d:1", i+1))
	}
	for i := range 5 * keys {
		remote := fmt.Sprintf("10.0.%d.%d:1", i/250, i%250+1)
		if rec := s.loginFrom(context.Background(), fmt.Sprintf("other%d", i), "wrong-password", remote); rec.Code != http.StatusBadRequest {
			t.Fatalf("flush attempt %d: %d", i, rec.Code)
		}
	}
	if rec := s.loginFrom(context.Background(), "ann", "right-password-1", "203.0.113.1:1"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("locked username after the flush: %d %s, want 429", rec.Code, rec.Body)
	}
}
