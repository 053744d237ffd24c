package web_test

import (
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"

	"github.com/gardend/gardend/server/web"
)

// BudgetBytes is the most the app's own JavaScript and CSS may weigh, gzip-compressed
// as served, before the 3D library: what a phone on a thin link fetches to draw the
// garden.
const BudgetBytes = 300 << 10

// TestPageWeight: the app's JavaScript and CSS (everything but the vendored 3D
// library, which only the 3D view loads) stay under the budget.
func TestPageWeight(t *testing.T) {
	app, err := web.New(web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	total, raw, files := 0, 0, 0
	for _, name := range app.Files() {
		if strings.HasPrefix(name, "vendor/") {
			continue
		}
		if ext := path.Ext(name); ext != ".js" && ext != ".css" {
			continue
		}
		body, _ := app.Asset(name)
		total += app.GzipSize(name)
		raw += len(body)
		files++
	}
	if files < 10 {
		t.Fatalf("only %d JS and CSS files counted", files)
	}
	t.Logf("app JavaScript and CSS: %d files, %d bytes, %d bytes gzip (budget %d)", files, raw, total, BudgetBytes)
	if total >= BudgetBytes {
		t.Errorf("the app's JS and CSS weigh %d bytes compressed; the budget is %d", total, BudgetBytes)
	}
	// The 3D library is vendored with its licence and version.
	for _, name := range []string{"vendor/three/LICENSE", "vendor/three/VERSION", "vendor/three/three.module.js", "vendor/three/three.core.js", "vendor/three/OrbitControls.js"} {
		if _, ok := app.Asset(name); !ok {
			t.Errorf("%s is missing", name)
		}
	}
	if mod, _ := app.Asset("vendor/three/OrbitControls.js"); strings.Contains(string(mod), `from 'three'`) {
		t.Errorf("OrbitControls.js still imports the bare name 'three'")
	}
}

// TestServeNegotiation: gzip only when accepted (q=0 refuses it), ETags answer 304,
// HEAD has no body, and every response carries the CSP.
func TestServeNegotiation(t *testing.T) {
	app, err := web.New(web.Options{RegistrationOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	get := func(method, name string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/x", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		if name == "" {
			app.ServeIndex(w, r)
		} else if !app.ServeAsset(w, r, app.Version(), name) {
			t.Fatalf("no asset %s", name)
		}
		return w
	}
	for _, c := range []struct {
		accept string
		gzip   bool
	}{
		{"", false}, {"gzip", true}, {"deflate, gzip;q=0.5", true}, {"gzip;q=0", false}, {"GZIP", true}, {"br", false}, {"gzip; q=0.0", false},
	} {
		w := get("GET", "app.css", "Accept-Encoding", c.accept)
		if got := w.Header().Get("Content-Encoding") == "gzip"; got != c.gzip {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", c.accept, got, c.gzip)
		}
		if w.Header().Get("Content-Security-Policy") != web.CSP || w.Header().Get("Vary") != "Accept-Encoding" {
			t.Errorf("headers %v", w.Header())
		}
	}
	etag := get("GET", "app.css").Header().Get("ETag")
	for _, inm := range []string{etag, `W/` + etag, `"x", ` + etag, "*"} {
		if w := get("GET", "app.css", "If-None-Match", inm); w.Code != http.StatusNotModified {
			t.Errorf("If-None-Match %s: %d", inm, w.Code)
		}
	}
	if w := get("GET", "app.css", "If-None-Match", `"other"`); w.Code != http.StatusOK {
		t.Errorf("another ETag: %d", w.Code)
	}
	if w := get("HEAD", "app.css"); w.Code != http.StatusOK || w.Body.Len() != 0 || w.Header().Get("Content-Length") == "0" {
		t.Errorf("HEAD: %d, %d bytes, length %q", w.Code, w.Body.Len(), w.Header().Get("Content-Length"))
	}
	if w := get("GET", ""); !strings.Contains(w.Body.String(), "/app/"+app.Version()+"/js/main.js") {
		t.Errorf("index does not name its version")
	}
	w := httptest.NewRecorder()
	if app.ServeAsset(w, httptest.NewRequest("GET", "/x", nil), "old", "app.css") {
		t.Errorf("an asset of another version was served")
	}
}
