package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
)

func registerBody(username string) string {
	return fmt.Sprintf(`{"username":%q,"password":"pw-of-%s","first_name":"F","last_name":"L"}`, username, username)
}

func registerFrom(t *testing.T, h http.Handler, username, remote string) int {
	t.Helper()
	return fieldDo(t, h, fieldRequest{method: "POST", path: "/register", body: registerBody(username), remote: remote}).Code
}

// Accounts created per client address and in all are limited per window; refused or
// failed registrations do not count.
func TestRegisterLimits(t *testing.T) {
	clock := newFieldClock()
	srv := fieldNewServer(t, clock, func(c *server.Config) {
		c.RegisterLimit, c.RegisterGlobalLimit, c.RegisterWindow = 3, 5, time.Hour
	})
	h := srv.Handler()
	const a, b = "192.0.2.1:1000", "192.0.2.2:1000"
	for i := range 3 {
		if code := registerFrom(t, h, fmt.Sprintf("a%d", i), a); code != http.StatusCreated {
			t.Fatalf("registration %d from a: %d", i, code)
		}
		// A taken name and an invalid one do not use up the allowance.
		if code := registerFrom(t, h, fmt.Sprintf("a%d", i), a); code != http.StatusBadRequest {
			t.Fatalf("taken name: %d", code)
		}
		if code := registerFrom(t, h, "bad name", a); code != http.StatusBadRequest {
			t.Fatalf("invalid name: %d", code)
		}
	}
	rec := fieldDo(t, h, fieldRequest{method: "POST", path: "/register", body: registerBody("a3"), remote: "192.0.2.1:2000"})
	p := fieldProblem(t, rec, http.StatusTooManyRequests)
	fieldRetryAfter(t, rec, "3600")
	if p["detail"] == "" {
		t.Fatalf("429 without detail: %v", p)
	}
	// Another address has its own allowance, until the server's is used up.
	for i := range 2 {
		if code := registerFrom(t, h, fmt.Sprintf("b%d", i), b); code != http.StatusCreated {
			t.Fatalf("registration %d from b: %d", i, code)
		}
	}
	rec = fieldDo(t, h, fieldRequest{method: "POST", path: "/register", body: registerBody("c0"), remote: "192.0.2.3:1000"})
	fieldProblem(t, rec, http.StatusTooManyRequests)
	// Logins are not affected, and an hour later registration opens again.
	fieldStatus(t, fieldLogin(t, h, "a0", "pw-of-a0", a), http.StatusOK)
	clock.Advance(time.Hour)
	if code := registerFrom(t, h, "a3", a); code != http.StatusCreated {
		t.Fatalf("after the window: %d", code)
	}
}

// Every field is checked before a hash is spent on the password.
func TestRegisterValidatesBeforeHashing(t *testing.T) {
	srv := fieldNewServer(t, nil, nil)
	fieldCreateUser(t, srv, "taken", "pw-of-taken")
	h := srv.Handler()
	before := srv.Passwords().Hashes()
	for _, body := range []string{
		`{"username":"bad name","password":"garden-pw-1","first_name":"F","last_name":"L"}`,
		`{"username":"ok","password":"garden-pw-1","first_name":" ","last_name":"L"}`,
		`{"username":"ok","password":"garden-pw-1","first_name":"F","last_name":"L","email":"nope"}`,
		`{"username":"ok","password":"short","first_name":"F","last_name":"L"}`,
		`{"username":"taken","password":"garden-pw-1","first_name":"F","last_name":"L"}`,
		`{"username":"ｔａｋｅｎ","password":"garden-pw-1","first_name":"F","last_name":"L"}`,
		`{"username":"tаken","password":"garden-pw-1","first_name":"F","last_name":"L"}`,
		`{"username":"` + string(make([]byte, 151)) + `","password":"garden-pw-1","first_name":"F","last_name":"L"}`,
	} {
		fieldProblem(t, fieldDo(t, h, fieldRequest{method: "POST", path: "/register", body: body}), http.StatusBadRequest)
	}
	if n := srv.Passwords().Hashes() - before; n != 0 {
		t.Fatalf("%d hashes spent on invalid registrations", n)
	}
	fieldStatus(t, fieldDo(t, h, fieldRequest{method: "POST", path: "/register", body: registerBody("fine")}), http.StatusCreated)
	if n := srv.Passwords().Hashes() - before; n != 1 {
		t.Fatalf("%d hashes for one registration", n)
	}
}

// Usernames that render alike are one account: fullwidth and mathematical letters
// are the plain ones (NFKC), lookalike letters of other scripts are refused, and the
// plain account logs in whichever form is typed.
func TestRegisterLookalikeUsernames(t *testing.T) {
	h := newHarness(t)
	h.register("bob")
	for _, name := range []string{"ｂｏｂ", "𝐛𝐨𝐛", "𝖇𝖔𝖇", "bоb", "ｂоｂ", "Ьob"} {
		h.do("POST", "/register", "", map[string]string{
			"username": name, "password": "pw-of-someone", "first_name": "F", "last_name": "L",
		}).expectProblem(http.StatusBadRequest, "")
	}
	h.login("ｂｏｂ", "pw-bob-123").expect(http.StatusOK)
	h.login("bоb", "pw-bob-123").expect(http.StatusBadRequest) // Cyrillic о: no such account
	// A fullwidth registration is stored, and shown, plain.
	token := h.register("ｃａｒｏｌ")
	if got := h.do("GET", "/user", token, nil).expect(http.StatusOK).json()["username"]; got != "carol" {
		t.Fatalf("username %v, want carol", got)
	}
	// The password must not be the username in any of its forms.
	h.do("POST", "/register", "", map[string]string{
		"username": "ｇａｒｄｅｎｅｒ", "password": "gardener", "first_name": "F", "last_name": "L",
	}).expectProblem(http.StatusBadRequest, "password")
}

// Names drawn like an existing account's by Unicode's confusables (UTS #39), or
// differing from it in case only, are refused with a 400 that names the field and
// says why, on registration and on a rename; the existing accounts are untouched.
func TestRegisterConfusableUsernames(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"alice", "mary", "olga"} {
		h.register(name)
	}
	for _, name := range []string{"aIice", "aǀice", "ɑlice", "alıce", "Alice", "ALICE", "rnary", "0lga"} {
		p := h.do("POST", "/register", "", map[string]string{
			"username": name, "password": "pw-of-someone", "first_name": "F", "last_name": "L",
		}).expectProblem(http.StatusBadRequest, "username")
		if detail, _ := p["detail"].(string); !strings.Contains(detail, "looks like an existing account") {
			t.Errorf("%q: detail %q", name, detail)
		}
	}
	token := h.register("bob")
	h.do("PUT", "/user", token, map[string]string{"username": "aIice"}).expectProblem(http.StatusBadRequest, "username")
	h.login("alice", "pw-alice-123").expect(http.StatusOK)
}
