package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
)

func TestRegister(t *testing.T) {
	h := newHarness(t)
	res := h.do("POST", "/register", "", map[string]string{
		"username": "ann", "password": "sunflower-9", "first_name": "Ann", "last_name": "Gardener",
	}).expect(http.StatusCreated)
	body := res.json()
	token, _ := body["token"].(string)
	if len(token) != 64 || strings.Trim(token, "0123456789abcdef") != "" {
		t.Fatalf("token %q is not 64 hex characters", token)
	}
	expiry, err := time.Parse(time.RFC3339, body["expiry"].(string))
	if err != nil || !expiry.Equal(h.clock.Now().Add(server.DefaultTokenTTL)) || !strings.HasSuffix(body["expiry"].(string), "Z") {
		t.Fatalf("expiry %v (%v), want now+10h in UTC", body["expiry"], err)
	}
	user := h.do("GET", "/user", token, nil).expect(http.StatusOK).json()
	if user["username"] != "ann" || user["first_name"] != "Ann" || user["last_name"] != "Gardener" || user["email"] != "" {
		t.Fatalf("user %v", user)
	}
	if user["last_login"] == nil || user["date_joined"] == nil {
		t.Fatalf("register logs in: last_login must be set: %v", user)
	}
	if _, leaked := user["password_hash"]; leaked {
		t.Fatal("password hash leaked")
	}
}

func TestRegisterRejects(t *testing.T) {
	h := newHarness(t)
	h.register("taken")
	valid := func(m map[string]any) map[string]any {
		base := map[string]any{"username": "bob", "password": "sunflower-9", "first_name": "B", "last_name": "C"}
		for k, v := range m {
			if v == nil {
				delete(base, k)
			} else {
				base[k] = v
			}
		}
		return base
	}
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"duplicate username", valid(map[string]any{"username": "taken"}), "username"},
		{"missing username", valid(map[string]any{"username": nil}), "username"},
		{"missing password", valid(map[string]any{"password": nil}), "password"},
		{"missing first_name", valid(map[string]any{"first_name": nil}), "first_name"},
		{"missing last_name", valid(map[string]any{"last_name": nil}), "last_name"},
		{"short password", valid(map[string]any{"password": "short"}), "password"},
		{"numeric password", valid(map[string]any{"password": "1234567890"}), "password"},
		{"password equals username", valid(map[string]any{"username": "gardening", "password": "gardening"}), "password"},
		{"bad username characters", valid(map[string]any{"username": "bob smith"}), "username"},
		{"number as username", valid(map[string]any{"username": 7}), "username"},
		{"malformed json", `{"username":`, "body"},
		{"array body", `[1]`, "body"},
		{"empty body", "", "body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.do("POST", "/register", "", tc.body).expectProblem(http.StatusBadRequest, tc.field)
		})
	}
}

func TestLoginJSONAndForm(t *testing.T) {
	h := newHarness(t)
	h.register("ann")
	h.login("ann", "pw-ann-123").expect(http.StatusOK)

	form := url.Values{"username": {"ann"}, "password": {"pw-ann-123"}}
	req := httptest.NewRequest("POST", "/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"token"`) {
		t.Fatalf("form login: %d %s", rec.Code, rec.Body)
	}
	// Login ignores an Authorization header, even an invalid one.
	h.do("POST", "/login", "garbage", map[string]string{"username": "ann", "password": "pw-ann-123"}).expect(http.StatusOK)
}

func TestLoginFailuresAreGeneric(t *testing.T) {
	h := newHarness(t)
	h.register("ann")
	wrongPw := h.login("ann", "wrong-password").expectProblem(http.StatusBadRequest, "")
	noUser := h.login("nobody", "wrong-password").expectProblem(http.StatusBadRequest, "")
	if wrongPw["detail"] != noUser["detail"] {
		t.Fatalf("login failures differ, leaking which part was wrong: %q vs %q", wrongPw["detail"], noUser["detail"])
	}
	h.do("POST", "/login", "", map[string]string{"username": "ann"}).expectProblem(http.StatusBadRequest, "password")
	h.do("POST", "/login", "", map[string]string{"password": "x"}).expectProblem(http.StatusBadRequest, "username")
}

func TestTokenExpiry(t *testing.T) {
	h := newHarness(t, func(c *server.Config) { c.TokenTTL = time.Hour })
	token := h.register("ann")
	h.clock.Advance(59 * time.Minute)
	h.do("GET", "/user", token, nil).expect(http.StatusOK)
	h.clock.Advance(time.Minute)
	res := h.do("GET", "/user", token, nil)
	res.expectProblem(http.StatusUnauthorized, "")
	if res.Header().Get("WWW-Authenticate") != "Token" {
		t.Fatalf("WWW-Authenticate %q", res.Header().Get("WWW-Authenticate"))
	}
}

func TestUnauthenticated(t *testing.T) {
	h := newHarness(t)
	token := h.register("ann")
	for _, path := range []string{"/user", "/user/widgets"} {
		for _, auth := range []string{"", "Token ", "Bearer " + token, "Token " + strings.Repeat("0", 64), token} {
			res := h.do("GET", path, "", nil, "Authorization", auth)
			res.expectProblem(http.StatusUnauthorized, "")
			if res.Header().Get("WWW-Authenticate") != "Token" {
				t.Errorf("%s with %q: no WWW-Authenticate", path, auth)
			}
		}
	}
	for _, p := range []string{"/logout", "/logoutall"} {
		h.do("POST", p, "", nil).expectProblem(http.StatusUnauthorized, "")
	}
}

func TestLogoutVersusLogoutAll(t *testing.T) {
	h := newHarness(t)
	t1 := h.register("ann")
	t2 := h.login("ann", "pw-ann-123").expect(http.StatusOK).json()["token"].(string)
	t3 := h.login("ann", "pw-ann-123").expect(http.StatusOK).json()["token"].(string)
	other := h.register("bob")

	if body := h.do("POST", "/logout", t1, nil).expect(http.StatusOK).Body.String(); body != "{}" {
		t.Fatalf("logout body %q", body)
	}
	h.do("GET", "/user", t1, nil).expect(http.StatusUnauthorized)
	h.do("GET", "/user", t2, nil).expect(http.StatusOK)

	h.do("POST", "/logoutall", t2, nil).expect(http.StatusOK)
	h.do("GET", "/user", t2, nil).expect(http.StatusUnauthorized)
	h.do("GET", "/user", t3, nil).expect(http.StatusUnauthorized)
	h.do("GET", "/user", other, nil).expect(http.StatusOK)
}

func TestPutUser(t *testing.T) {
	h := newHarness(t)
	token := h.register("ann")
	second := h.login("ann", "pw-ann-123").json()["token"].(string)
	h.register("bob")

	res := h.do("PUT", "/user", token, map[string]string{"first_name": "Annie", "email": "ann@example.org"}).expect(http.StatusOK).json()
	if res["first_name"] != "Annie" || res["email"] != "ann@example.org" || res["last_name"] != "L" {
		t.Fatalf("updated user %v", res)
	}
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"empty object", map[string]string{}, "body"},
		{"taken username", map[string]string{"username": "bob"}, ""},
		{"bad email", map[string]string{"email": "no-at-sign"}, "email"},
		{"blank last name", map[string]string{"last_name": ""}, "last_name"},
		{"short password", map[string]string{"password": "short"}, "password"},
		{"number for name", map[string]any{"first_name": 3}, "first_name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.do("PUT", "/user", token, tc.body).expectProblem(http.StatusBadRequest, tc.field)
		})
	}

	// A password change keeps the calling token and revokes the others.
	h.do("PUT", "/user", token, map[string]string{"password": "new-secret-77"}).expect(http.StatusOK)
	h.do("GET", "/user", token, nil).expect(http.StatusOK)
	h.do("GET", "/user", second, nil).expect(http.StatusUnauthorized)
	h.login("ann", "pw-ann-123").expect(http.StatusBadRequest)
	h.login("ann", "new-secret-77").expect(http.StatusOK)

	// Renaming frees the old name and the new one logs in.
	h.do("PUT", "/user", token, map[string]string{"username": "annie"}).expect(http.StatusOK)
	h.login("annie", "new-secret-77").expect(http.StatusOK)
	h.login("ann", "new-secret-77").expect(http.StatusBadRequest)
}

func TestWidgetsRoundTrip(t *testing.T) {
	h := newHarness(t)
	token := h.register("ann")
	if body := h.do("GET", "/user/widgets", token, nil).expect(http.StatusOK).Body.String(); body != "{}" {
		t.Fatalf("widgets before saving: %q", body)
	}
	docs := []string{
		`{"widgets":["map","weather"]}`,
		`[1, 2.50, "drei", null, true]`,
		`{"grüße":"日本語 🌱","esc":"\u00e9\n"}`,
		`{"a":{"b":{"c":[{"d":[[[]]]}]}},"order":{"z":1,"a":2}}`,
		`"just a string"`,
		"  {\"spaced\" : 1 }  \n",
	}
	for _, doc := range docs {
		res := h.do("POST", "/user/widgets", token, doc).expect(http.StatusCreated)
		if res.Body.String() != doc {
			t.Fatalf("save echoed %q, want %q", res.Body.String(), doc)
		}
		if got := h.do("GET", "/user/widgets", token, nil).expect(http.StatusOK).Body.String(); got != doc {
			t.Fatalf("round trip %q, want byte-for-byte %q", got, doc)
		}
	}
	for _, bad := range []string{"", "{", "nul", "{} []"} {
		h.do("POST", "/user/widgets", token, bad).expectProblem(http.StatusBadRequest, "body")
	}
	// Invalid UTF-8 inside a string passes json.Valid, but would be served as
	// charset=utf-8: refused, naming the byte, and the saved document stays.
	before := h.do("GET", "/user/widgets", token, nil).Body.String()
	p := h.do("POST", "/user/widgets", token, "{\"name\":\"caf\xe9\"}").expectProblem(http.StatusBadRequest, "body")
	if !strings.Contains(p["detail"].(string), "not valid UTF-8 (byte 12)") {
		t.Fatalf("detail %q", p["detail"])
	}
	if after := h.do("GET", "/user/widgets", token, nil).Body.String(); after != before {
		t.Fatalf("a refused save changed the document to %q", after)
	}
	big := `{"x":"` + strings.Repeat("a", 70<<10) + `"}`
	h.do("POST", "/user/widgets", token, big).expect(http.StatusRequestEntityTooLarge)
	// Chunked (no Content-Length): the same answer once the read passes the limit.
	chunked := httptest.NewRequest("POST", "/user/widgets", io.MultiReader(strings.NewReader(big)))
	chunked.ContentLength = -1
	chunked.Header.Set("Content-Type", "application/json")
	chunked.Header.Set("Authorization", "Token "+token)
	rec := httptest.NewRecorder()
	h.h.ServeHTTP(rec, chunked)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked oversized widgets: %d %s", rec.Code, rec.Body)
	}
	// Exactly at the limit is accepted.
	exact := `"` + strings.Repeat("a", (64<<10)-2) + `"`
	h.do("POST", "/user/widgets", token, exact).expect(http.StatusCreated)
	// Widgets are per user.
	if body := h.do("GET", "/user/widgets", h.register("bob"), nil).Body.String(); body != "{}" {
		t.Fatalf("bob sees %q", body)
	}
}

func TestRoutingProblems(t *testing.T) {
	h := newHarness(t)
	token := h.register("ann")
	h.do("GET", "/nowhere", token, nil).expectProblem(http.StatusNotFound, "")
	h.do("GET", "/user/", token, nil).expectProblem(http.StatusNotFound, "")
	res := h.do("DELETE", "/user", token, nil)
	res.expectProblem(http.StatusMethodNotAllowed, "")
	if allow := res.Header().Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "PUT") {
		t.Fatalf("Allow %q", allow)
	}
	h.do("GET", "/login", "", nil).expectProblem(http.StatusMethodNotAllowed, "")
}

func TestBodyLimit(t *testing.T) {
	h := newHarness(t, func(c *server.Config) { c.MaxBodyBytes = 512 })
	body := `{"username":"` + strings.Repeat("a", 600) + `","password":"x"}`
	h.do("POST", "/login", "", body).expectProblem(http.StatusRequestEntityTooLarge, "")
	h.do("POST", "/register", "", body).expectProblem(http.StatusRequestEntityTooLarge, "")
	// Operations without a body are no exception (docs/openapi.yaml lists 413 for them).
	for _, path := range []string{"/healthz", "/readyz", "/version", "/openapi.yaml", "/"} {
		h.do("GET", path, "", body).expectProblem(http.StatusRequestEntityTooLarge, "")
	}
}

func TestContentTypeChecked(t *testing.T) {
	h := newHarness(t)
	h.do("POST", "/register", "", `{"username":"a"}`, "Content-Type", "text/plain").expectProblem(http.StatusUnsupportedMediaType, "")
}

func TestRequestIDAndCORS(t *testing.T) {
	h := newHarness(t)
	res := h.do("GET", "/healthz", "", nil, "X-Request-Id", "abc-123", "Origin", "https://app.example")
	res.expect(http.StatusOK)
	if res.Body.String() != `{"status":"ok"}` {
		t.Fatalf("healthz %q", res.Body.String())
	}
	if res.Header().Get("X-Request-Id") != "abc-123" {
		t.Fatalf("headers %v", res.Header())
	}
	if id := h.do("GET", "/healthz", "", nil).Header().Get("X-Request-Id"); len(id) < 16 {
		t.Fatalf("generated request id %q", id)
	}
	// By default only the server's own origin: a foreign page learns nothing, and
	// its preflight gets no permission (the browser then never sends the request).
	for _, r := range []recorded{
		res,
		h.do("OPTIONS", "/user/widgets", "", nil, "Origin", "https://app.example", "Access-Control-Request-Method", "POST"),
	} {
		for k := range r.Header() {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Fatalf("default CORS sent %s: %v", k, r.Header())
			}
		}
	}

	anyOrigin := newHarness(t, func(c *server.Config) { c.CORSOrigins = []string{"*"} })
	if got := anyOrigin.do("GET", "/healthz", "", nil, "Origin", "https://app.example").Header().Get("Access-Control-Allow-Origin"); got != "*" {
		t.Fatalf("with * the origin got %q", got)
	}
	pre := anyOrigin.do("OPTIONS", "/user/widgets", "", nil, "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	pre.expect(http.StatusNoContent)
	if !strings.Contains(pre.Header().Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight headers %v", pre.Header())
	}

	strict := newHarness(t, func(c *server.Config) { c.CORSOrigins = []string{"https://ok.example"} })
	if got := strict.do("GET", "/healthz", "", nil, "Origin", "https://ok.example").Header().Get("Access-Control-Allow-Origin"); got != "https://ok.example" {
		t.Fatalf("allowed origin got %q", got)
	}
	if got := strict.do("GET", "/healthz", "", nil, "Origin", "https://evil.example").Header().Get("Access-Control-Allow-Origin"); got != "" {
		t.Fatalf("foreign origin got %q", got)
	}
	for _, bad := range []string{"plantmap.example", "https://plantmap.example/app", "ftp://x", "https://"} {
		_, err := newServer(t, server.Config{DataDir: t.TempDir(), CORSOrigins: []string{bad}})
		if err == nil || !strings.Contains(err.Error(), "scheme://host") {
			t.Errorf("origin %q: %v", bad, err)
		}
	}
}

// The password never equals the username, whichever changes: renaming to the current
// password was let through, since only a new password was compared.
func TestPasswordNeverEqualsUsername(t *testing.T) {
	h := newHarness(t)
	token := h.register("ann")
	for _, name := range []string{"pw-ann-123", "ｐｗ－ａｎｎ－１２３"} { // the password, and its fullwidth form
		p := h.do("PUT", "/user", token, map[string]string{"username": name}).expectProblem(http.StatusBadRequest, "username")
		if p["detail"] != "username must not equal the password" {
			t.Fatalf("detail %v", p["detail"])
		}
	}
	h.do("PUT", "/user", token, map[string]string{"password": "new-name-77"}).expect(http.StatusOK)
	h.do("PUT", "/user", token, map[string]string{"username": "new-name-77"}).expectProblem(http.StatusBadRequest, "username")
	h.do("PUT", "/user", token, map[string]string{"username": "same-8chars", "password": "same-8chars"}).expectProblem(http.StatusBadRequest, "password")
	h.do("PUT", "/user", token, map[string]string{"password": "ann"}).expectProblem(http.StatusBadRequest, "password")
	// Other renames go through, and the account is as it was otherwise.
	if got := h.do("PUT", "/user", token, map[string]string{"username": "annie"}).expect(http.StatusOK).json()["username"]; got != "annie" {
		t.Fatalf("renamed to %v", got)
	}
	h.login("annie", "new-name-77").expect(http.StatusOK)
}
