package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
)

const (
	fieldPassword = "correct horse"
	fieldWrong    = "wrong password"
)

func fieldRemote(i int) string { return fmt.Sprintf("192.0.2.%d:40000", i+1) }

// fieldRetryAfter checks a 429 problem and its Retry-After.
func fieldRetryAfter(t *testing.T, rec *httptest.ResponseRecorder, want string) {
	t.Helper()
	if got := rec.Header().Get("Retry-After"); got != want {
		t.Fatalf("Retry-After %q, want %q", got, want)
	}
}

func TestLoginLimitPerUsername(t *testing.T) {
	clock := newFieldClock()
	srv := fieldNewServer(t, clock, nil)
	fieldCreateUser(t, srv, "alice", fieldPassword)
	h := srv.Handler()

	// Ten failures, each from a different address so only the username limit applies.
	for i := range server.DefaultLoginFailLimit {
		fieldProblem(t, fieldLogin(t, h, "alice", fieldWrong, fieldRemote(i)), http.StatusBadRequest)
	}
	// Now even the right password is refused without being checked.
	rec := fieldLogin(t, h, "alice", fieldPassword, fieldRemote(50))
	p := fieldProblem(t, rec, http.StatusTooManyRequests)
	fieldRetryAfter(t, rec, "60")
	if p["detail"] == "" {
		t.Fatalf("429 without detail: %v", p)
	}
	// A different username from those addresses is not affected.
	fieldCreateUser(t, srv, "bob", fieldPassword)
	fieldStatus(t, fieldLogin(t, h, "bob", fieldPassword, fieldRemote(0)), http.StatusOK)

	clock.Advance(45 * time.Second)
	fieldRetryAfter(t, fieldLogin(t, h, "alice", fieldPassword, fieldRemote(51)), "15")
	clock.Advance(14*time.Second + 500*time.Millisecond)
	fieldRetryAfter(t, fieldLogin(t, h, "alice", fieldPassword, fieldRemote(52)), "1") // rounded up

	// The window is over: alice may log in again, and gets a fresh allowance.
	clock.Advance(time.Second)
	fieldStatus(t, fieldLogin(t, h, "alice", fieldPassword, fieldRemote(53)), http.StatusOK)
	fieldProblem(t, fieldLogin(t, h, "alice", fieldWrong, fieldRemote(54)), http.StatusBadRequest)
}

// TestLoginLimitAcrossSpellings: the failed-login limit counts per account, not per
// spelling of its name. Login finds victim's account through every NFKC variant of
// the name, so ten wrong passwords spread over them use up victim's budget, and no
// variant gets fresh guesses; an unknown name's variants share one budget too.
func TestLoginLimitAcrossSpellings(t *testing.T) {
	srv := fieldNewServer(t, nil, nil)
	fieldCreateUser(t, srv, "victim", fieldPassword)
	h := srv.Handler()
	spellings := []string{"victim", "ｖictim", "vi𝐜tim", "ｖｉｃｔｉｍ", "𝐯𝐢𝐜𝐭𝐢𝐦"}
	// Each guess from another address: only the per-account limit applies.
	for i := range server.DefaultLoginFailLimit {
		fieldProblem(t, fieldLogin(t, h, spellings[1+i%4], fieldWrong, fieldRemote(i)), http.StatusBadRequest)
	}
	for i, name := range spellings {
		rec := fieldLogin(t, h, name, fieldPassword, fieldRemote(20+i))
		fieldProblem(t, rec, http.StatusTooManyRequests)
		fieldRetryAfter(t, rec, "60")
	}

	for i := range server.DefaultLoginFailLimit {
		fieldProblem(t, fieldLogin(t, h, []string{"ghost", "ｇhost"}[i%2], fieldWrong, fieldRemote(40+i)), http.StatusBadRequest)
	}
	fieldProblem(t, fieldLogin(t, h, "ｇｈｏｓｔ", fieldWrong, fieldRemote(60)), http.StatusTooManyRequests)
}

func TestLoginLimitPerAddress(t *testing.T) {
	srv := fieldNewServer(t, nil, nil)
	fieldCreateUser(t, srv, "alice", fieldPassword)
	h := srv.Handler()
	const attacker = "198.51.100.7:5555"

	// Unknown usernames count too (and answer like wrong passwords).
	for i := range server.DefaultLoginFailLimit {
		fieldProblem(t, fieldLogin(t, h, fmt.Sprintf("guess%d", i), fieldWrong, attacker), http.StatusBadRequest)
	}
	rec := fieldLogin(t, h, "alice", fieldPassword, "198.51.100.7:6666") // same host, new port
	fieldProblem(t, rec, http.StatusTooManyRequests)
	fieldRetryAfter(t, rec, "60")
	// Another address is unaffected, even for a username the attacker tried.
	fieldStatus(t, fieldLogin(t, h, "alice", fieldPassword, "203.0.113.9:1"), http.StatusOK)
	fieldProblem(t, fieldLogin(t, h, "guess0", fieldWrong, "203.0.113.9:1"), http.StatusBadRequest)
}

func TestLoginLimitSuccessesDoNotCount(t *testing.T) {
	srv := fieldNewServer(t, nil, nil)
	fieldCreateUser(t, srv, "alice", fieldPassword)
	h := srv.Handler()
	const office = "192.0.2.200:1000"

	for range 3 * server.DefaultLoginFailLimit {
		fieldStatus(t, fieldLogin(t, h, "alice", fieldPassword, office), http.StatusOK)
	}
	for range server.DefaultLoginFailLimit - 1 {
		fieldProblem(t, fieldLogin(t, h, "alice", fieldWrong, office), http.StatusBadRequest)
	}
	// Successes between failures neither count nor reset the count.
	fieldStatus(t, fieldLogin(t, h, "alice", fieldPassword, office), http.StatusOK)
	fieldProblem(t, fieldLogin(t, h, "alice", fieldWrong, office), http.StatusBadRequest)
	fieldProblem(t, fieldLogin(t, h, "alice", fieldPassword, office), http.StatusTooManyRequests)
}

func TestLoginLimitMalformedRequestsDoNotCount(t *testing.T) {
	srv := fieldNewServer(t, nil, func(c *server.Config) { c.LoginFailLimit = 2 })
	fieldCreateUser(t, srv, "alice", fieldPassword)
	h := srv.Handler()
	for range 5 {
		fieldProblem(t, fieldDo(t, h, fieldRequest{method: "POST", path: "/login", body: `{"username":"alice"}`}), http.StatusBadRequest)
	}
	fieldStatus(t, fieldLogin(t, h, "alice", fieldPassword, ""), http.StatusOK)
}

func TestLoginLimitConfigured(t *testing.T) {
	clock := newFieldClock()
	srv := fieldNewServer(t, clock, func(c *server.Config) {
		c.LoginFailLimit = 3
		c.LoginFailWindow = 10 * time.Second
	})
	fieldCreateUser(t, srv, "alice", fieldPassword)
	h := srv.Handler()
	for range 3 {
		fieldProblem(t, fieldLogin(t, h, "alice", fieldWrong, ""), http.StatusBadRequest)
	}
	clock.Advance(4 * time.Second)
	fieldRetryAfter(t, fieldLogin(t, h, "alice", fieldPassword, ""), "6")
	clock.Advance(6 * time.Second)
	fieldStatus(t, fieldLogin(t, h, "alice", fieldPassword, ""), http.StatusOK)
}

// Attempts are counted before the password is checked, so a burst of parallel guesses
// gets exactly the limit through, not the limit times the concurrency.
func TestLoginLimitParallelBurst(t *testing.T) {
	srv := fieldNewServer(t, nil, nil)
	fieldCreateUser(t, srv, "alice", fieldPassword)
	h := srv.Handler()
	const n = 40
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { codes[i] = fieldLogin(t, h, "alice", fieldWrong, fieldRemote(i)).Code })
	}
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	if count[http.StatusBadRequest] != server.DefaultLoginFailLimit || count[http.StatusTooManyRequests] != n-server.DefaultLoginFailLimit {
		t.Fatalf("answers %v, want %d×400 and the rest 429", count, server.DefaultLoginFailLimit)
	}
}

func TestLoginLimitForwardedFor(t *testing.T) {
	const proxy = "10.0.0.1:3000"
	xff := func(client string) map[string]string {
		return map[string]string{"X-Forwarded-For": "203.0.113.66, " + client}
	}
	for _, trust := range []bool{true, false} {
		t.Run(fmt.Sprint("trust=", trust), func(t *testing.T) {
			srv := fieldNewServer(t, nil, func(c *server.Config) { c.TrustProxy = trust })
			h := srv.Handler()
			for i := range server.DefaultLoginFailLimit {
				body := fmt.Sprintf(`{"username":"u%d","password":"%s"}`, i, fieldWrong)
				rec := fieldDo(t, h, fieldRequest{method: "POST", path: "/login", body: body, remote: proxy, header: xff("198.51.100.1")})
				fieldProblem(t, rec, http.StatusBadRequest)
			}
			// A different client behind the same proxy: its own allowance only when the
			// proxy is trusted; the spoofable first entry never matters.
			body := fmt.Sprintf(`{"username":"other","password":"%s"}`, fieldWrong)
			rec := fieldDo(t, h, fieldRequest{method: "POST", path: "/login", body: body, remote: proxy, header: xff("198.51.100.2")})
			want := http.StatusTooManyRequests
			if trust {
				want = http.StatusBadRequest
			}
			fieldProblem(t, rec, want)
		})
	}
}

// One IPv6 subscriber usually holds a whole /64, so addresses count per /64.
func TestLoginLimitIPv6Prefix(t *testing.T) {
	srv := fieldNewServer(t, nil, nil)
	h := srv.Handler()
	for i := range server.DefaultLoginFailLimit {
		remote := fmt.Sprintf("[2001:db8:1:2::%x]:443", i+1)
		fieldProblem(t, fieldLogin(t, h, fmt.Sprintf("u%d", i), fieldWrong, remote), http.StatusBadRequest)
	}
	fieldProblem(t, fieldLogin(t, h, "x", fieldWrong, "[2001:db8:1:2:ffff::1]:443"), http.StatusTooManyRequests)
	fieldProblem(t, fieldLogin(t, h, "x", fieldWrong, "[2001:db8:1:3::1]:443"), http.StatusBadRequest)
}
