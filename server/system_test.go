package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gardend/gardend/server"
)

// TestHeadForGetRoutes: every GET route answers HEAD with the GET's status and
// headers and no body (before, HEAD was 405 everywhere).
func TestHeadForGetRoutes(t *testing.T) {
	srv, base, _ := runServer(t, server.Config{DataDir: t.TempDir()})
	w := &imageWorld{ts: &testServer{tb: t, srv: srv}}
	w.admin = w.ts.register("admin")
	c := w.ts.createCompany(w.admin, "c")
	g := w.ts.createGarden(w.admin, c.ID, "g")
	w.path = gardenPath(c.ID, g.ID) + "/image"
	w.upload(t, fixture(t, "garden.png"))

	encoding := "identity"
	send := func(method, path, token string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Token "+token)
		}
		// Set, so that both methods ask the same (Go's client asks gzip for GET only).
		req.Header.Set("Accept-Encoding", encoding)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, body
	}
	type request struct {
		path, token string
		status      int
	}
	requests := []request{
		{"/healthz", "", 200},
		{"/readyz", "", 200},
		{"/openapi.yaml", "", 200},
		{"/user", w.admin, 200},
		{"/user", "", 401},
		{"/companies", w.admin, 200},
		{w.path, w.admin, 200},
		{gardenPath(c.ID, g.ID) + "/beds", w.admin, 503}, // no spatial server
		{"/nope", "", 404},
	}
	for _, encoding = range []string{"identity", "gzip"} {
		for _, tc := range requests {
			get, getBody := send("GET", tc.path, tc.token)
			head, headBody := send("HEAD", tc.path, tc.token)
			if get.StatusCode != tc.status || head.StatusCode != tc.status {
				t.Errorf("%s: GET %d, HEAD %d, want %d", tc.path, get.StatusCode, head.StatusCode, tc.status)
			}
			if len(headBody) != 0 {
				t.Errorf("HEAD %s sent a body of %d bytes", tc.path, len(headBody))
			}
			if get.Header.Get("Content-Type") != head.Header.Get("Content-Type") {
				t.Errorf("%s: Content-Type GET %q, HEAD %q", tc.path, get.Header.Get("Content-Type"), head.Header.Get("Content-Type"))
			}
			// /readyz's body carries timings, so its length differs from one answer to the next.
			if cl := head.Header.Get("Content-Length"); cl != "" && tc.status == 200 && tc.path != "/readyz" && cl != get.Header.Get("Content-Length") {
				t.Errorf("%s (%s): Content-Length GET %q, HEAD %q (%d bytes)", tc.path, encoding, get.Header.Get("Content-Length"), cl, len(getBody))
			}
			if ce := get.Header.Get("Content-Encoding"); ce != head.Header.Get("Content-Encoding") || (encoding == "identity" && ce != "") {
				t.Errorf("%s (%s): Content-Encoding GET %q, HEAD %q", tc.path, encoding, ce, head.Header.Get("Content-Encoding"))
			}
		}
	}
	// The image's length is known without sending it.
	encoding = "identity"
	if head, _ := send("HEAD", w.path, w.admin); head.ContentLength <= 0 {
		t.Errorf("HEAD image: Content-Length %d", head.ContentLength)
	}
	// A method a path does not have is still 405, and HEAD is listed as allowed.
	res, _ := send("DELETE", "/healthz", "")
	if res.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(res.Header.Get("Allow"), "HEAD") {
		t.Errorf("DELETE /healthz: %d, Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
}
