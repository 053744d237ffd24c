package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestPanicBecomesProblemAndIsLogged(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: zerolog.New(&logs)}
	h := s.observe(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != 500 || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("got %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if strings.Contains(rec.Body.String(), "boom") {
		t.Fatal("panic value leaked to the client")
	}
	if !strings.Contains(logs.String(), `"panic":"boom"`) || !strings.Contains(logs.String(), `"status":500`) {
		t.Fatalf("logs: %s", logs.String())
	}
	// The stack names the function that panicked (issue 11, bug 4).
	var line struct{ Stack string }
	json.Unmarshal([]byte(strings.SplitN(logs.String(), "\n", 2)[0]), &line)
	if !strings.Contains(line.Stack, "TestPanicBecomesProblemAndIsLogged") || !strings.Contains(line.Stack, "goroutine") {
		t.Fatalf("panic logged without its stack: %s", logs.String())
	}
}

func TestAccessLogNeverHoldsSecrets(t *testing.T) {
	var logs bytes.Buffer
	dir := t.TempDir()
	s, err := newForTest(t, Config{DataDir: dir, Logger: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	body := `{"username":"ann","password":"very-secret-pw","first_name":"A","last_name":"B"}`
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/register", strings.NewReader(body)))
	var res loginResult
	json.Unmarshal(rec.Body.Bytes(), &res)
	req := httptest.NewRequest("GET", "/user", nil)
	req.Header.Set("Authorization", "Token "+res.Token)
	req.Header.Set("User-Agent", "garden-client/1.0 "+strings.Repeat("x", 400))
	req.RemoteAddr = "192.0.2.7:4711"
	s.Handler().ServeHTTP(httptest.NewRecorder(), req)

	out := logs.String()
	for _, secret := range []string{"very-secret-pw", res.Token} {
		if secret == "" || strings.Contains(out, secret) {
			t.Fatalf("log contains a secret (%q): %s", secret, out)
		}
	}
	var line map[string]any
	lines := strings.Split(strings.TrimSpace(out), "\n")
	json.Unmarshal([]byte(lines[len(lines)-1]), &line)
	for _, k := range []string{"method", "path", "route", "status", "bytes", "duration_ms", "client", "user_agent", "request_id", "user_id"} {
		if _, ok := line[k]; !ok {
			t.Errorf("access log lacks %q: %v", k, line)
		}
	}
	ua, _ := line["user_agent"].(string)
	if line["user_id"] != float64(1) || line["client"] != "192.0.2.7" || line["route"] != "/user" ||
		!strings.HasPrefix(ua, "garden-client/1.0 ") || len(ua) != maxUserAgent {
		t.Errorf("user_id %v client %v route %v user_agent %q (%d bytes)", line["user_id"], line["client"], line["route"], ua, len(ua))
	}
}

// The access log and the metrics spell a route alike, as docs/openapi.yaml does.
func TestRouteSpelledAlikeInLogAndMetrics(t *testing.T) {
	var logs bytes.Buffer
	s, err := newForTest(t, Config{DataDir: t.TempDir(), Logger: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	s.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/companies/7/gardens/9", nil))
	const want = "/companies/{company_id}/gardens/{garden_id}"
	var line map[string]any
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil {
		t.Fatal(err)
	}
	if line["route"] != want {
		t.Errorf("log route %v, want %s", line["route"], want)
	}
	rec := httptest.NewRecorder()
	s.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `route="`+want+`"`) {
		t.Errorf("no metric labelled route=%q:\n%s", want, rec.Body)
	}
}

func TestProblemForInternalErrorIsGeneric(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: zerolog.New(&logs)}
	rec := httptest.NewRecorder()
	s.writeError(rec, httptest.NewRequest("GET", "/", nil), errSecretPath)
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "/var/lib") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "/var/lib") {
		t.Fatal("internal error not logged")
	}
}

var errSecretPath = &pathErr{}

type pathErr struct{}

func (*pathErr) Error() string { return "open /var/lib/gardend/x: permission denied" }
