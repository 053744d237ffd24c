package web_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gardend/gardend/server/web"
	"github.com/gardend/gardend/server/web/internal/pack"
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

// TestServeNegotiation: gzip only when accepted (q=0 refuses it), one weak ETag for
// both representations answering 304, HEAD without a body but with the length, and
// every response with the CSP.
func TestServeNegotiation(t *testing.T) {
	app, err := web.New(web.Options{RegistrationOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		accept string
		gzip   bool
	}{
		{"", false}, {"gzip", true}, {"deflate, gzip;q=0.5", true}, {"gzip;q=0", false}, {"GZIP", true}, {"br", false}, {"gzip; q=0.0", false},
	} {
		w := get(t, app, "GET", "app.css", "Accept-Encoding", c.accept)
		if got := w.Header().Get("Content-Encoding") == "gzip"; got != c.gzip {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", c.accept, got, c.gzip)
		}
		if w.Header().Get("Content-Security-Policy") != web.CSP || w.Header().Get("Vary") != "Accept-Encoding" {
			t.Errorf("headers %v", w.Header())
		}
	}
	for _, name := range []string{"", "app.css"} { // the index and an asset
		plain, zipped := get(t, app, "GET", name), get(t, app, "GET", name, "Accept-Encoding", "gzip")
		etag := plain.Header().Get("ETag")
		if !strings.HasPrefix(etag, `W/"`) || zipped.Header().Get("ETag") != etag {
			t.Errorf("%q: ETags %s and %s: want one weak ETag", name, etag, zipped.Header().Get("ETag"))
		}
		for _, inm := range []string{etag, strings.TrimPrefix(etag, "W/"), `"x", ` + etag, "*"} {
			if w := get(t, app, "GET", name, "If-None-Match", inm); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
				t.Errorf("%q: If-None-Match %s: %d", name, inm, w.Code)
			}
		}
		if w := get(t, app, "GET", name, "If-None-Match", etag, "Accept-Encoding", "gzip"); w.Code != http.StatusNotModified ||
			w.Header().Get("Content-Encoding") != "" || w.Header().Get("Content-Length") != "" {
			t.Errorf("%q: If-None-Match with gzip: %d %v", name, w.Code, w.Header())
		}
		if w := get(t, app, "GET", name, "If-None-Match", `"other"`); w.Code != http.StatusOK {
			t.Errorf("%q: another ETag: %d", name, w.Code)
		}
		if got := gunzip(t, zipped.Body.Bytes()); !bytes.Equal(got, plain.Body.Bytes()) {
			t.Errorf("%q: the gzip body is not the plain one compressed", name)
		}
		if zipped.Header().Get("Content-Length") != strconv.Itoa(zipped.Body.Len()) || plain.Header().Get("Content-Length") != strconv.Itoa(plain.Body.Len()) {
			t.Errorf("%q: lengths %q (%d bytes gzip), %q (%d bytes)", name, zipped.Header().Get("Content-Length"), zipped.Body.Len(),
				plain.Header().Get("Content-Length"), plain.Body.Len())
		}
		for _, accept := range []string{"", "gzip"} {
			full := get(t, app, "GET", name, "Accept-Encoding", accept)
			w := get(t, app, "HEAD", name, "Accept-Encoding", accept)
			if w.Code != http.StatusOK || w.Body.Len() != 0 || w.Header().Get("Content-Length") != strconv.Itoa(full.Body.Len()) ||
				w.Header().Get("Content-Encoding") != full.Header().Get("Content-Encoding") {
				t.Errorf("%q: HEAD (Accept-Encoding %q): %d, %d bytes, %v", name, accept, w.Code, w.Body.Len(), w.Header())
			}
		}
	}
	if w := get(t, app, "GET", ""); !strings.Contains(w.Body.String(), "/app/"+app.Version()+"/js/main.js") {
		t.Errorf("index does not name its version")
	}
	if app.GzipSize("app.css") != get(t, app, "GET", "app.css", "Accept-Encoding", "gzip").Body.Len() {
		t.Errorf("GzipSize is not what is served")
	}
	w := httptest.NewRecorder()
	if app.ServeAsset(w, httptest.NewRequest("GET", "/x", nil), "old", "app.css") {
		t.Errorf("an asset of another version was served")
	}
}

// TestServeRanges: a range is of the representation sent: of the gzip bytes when
// gzip is taken, of the file itself otherwise (decompressed up to it); several ranges
// of the file itself get it whole; a range past the end is 416.
func TestServeRanges(t *testing.T) {
	app, err := web.New(web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const name = "vendor/three/three.core.js"
	raw, _ := app.Asset(name)
	gz := get(t, app, "GET", name, "Accept-Encoding", "gzip").Body.Bytes()
	if len(raw) < 1<<20 || len(gz) == 0 {
		t.Fatalf("%d raw bytes, %d gzipped", len(raw), len(gz))
	}
	w := get(t, app, "GET", name, "Range", "bytes=1000000-1000099")
	if w.Code != http.StatusPartialContent || !bytes.Equal(w.Body.Bytes(), raw[1000000:1000100]) ||
		w.Header().Get("Content-Range") != fmt.Sprintf("bytes 1000000-1000099/%d", len(raw)) {
		t.Errorf("a range of the file: %d %v %q", w.Code, w.Header(), w.Body.String())
	}
	w = get(t, app, "GET", name, "Range", "bytes=-50")
	if w.Code != http.StatusPartialContent || !bytes.Equal(w.Body.Bytes(), raw[len(raw)-50:]) {
		t.Errorf("the last 50 bytes: %d %q", w.Code, w.Body.String())
	}
	w = get(t, app, "GET", name, "Range", "bytes=100-199", "Accept-Encoding", "gzip")
	if w.Code != http.StatusPartialContent || !bytes.Equal(w.Body.Bytes(), gz[100:200]) ||
		w.Header().Get("Content-Encoding") != "gzip" || w.Header().Get("Content-Length") != "100" {
		t.Errorf("a range of the gzip bytes: %d %v", w.Code, w.Header())
	}
	w = get(t, app, "GET", name, "Range", "bytes=500-599,0-9")
	if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), raw) {
		t.Errorf("several ranges of the file: %d, %d bytes", w.Code, w.Body.Len())
	}
	w = get(t, app, "GET", name, "Range", fmt.Sprintf("bytes=%d-", len(raw)+10))
	if w.Code != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("a range past the end: %d", w.Code)
	}
	// The ETag is weak (it is shared by both representations): If-Range cannot resume
	// with it, the whole file comes.
	etag := get(t, app, "HEAD", name).Header().Get("ETag")
	w = get(t, app, "GET", name, "Range", "bytes=100-199", "If-Range", etag, "Accept-Encoding", "gzip")
	if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), gz) {
		t.Errorf("If-Range with the weak ETag: %d, %d bytes", w.Code, w.Body.Len())
	}
	w = get(t, app, "HEAD", name, "Range", "bytes=10-19")
	if w.Code != http.StatusPartialContent || w.Body.Len() != 0 || w.Header().Get("Content-Length") != "10" {
		t.Errorf("HEAD with a range: %d %v", w.Code, w.Header())
	}
}

// TestNewReadsNothing: preparing the app (at every start) neither reads nor compresses
// the assets: it used to read and hash all 2.2 MB of them, which cost start-up time
// and kept a copy in memory.
func TestNewReadsNothing(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	app, err := web.New(web.Options{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("New allocated %d bytes", n)
	}
	runtime.KeepAlive(app)
}

// TestPackedAssets: gz/ and assets_gen.go are what gzipgen makes of static/ now.
func TestPackedAssets(t *testing.T) {
	files, err := pack.Read(os.DirFS("static"))
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := pack.Build(files)
	if err != nil {
		t.Fatal(err)
	}
	const fix = "; run go generate -run gzipgen ./server/web"
	gen, err := os.ReadFile("assets_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	wantGen, err := pack.GoSource(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gen, wantGen) {
		t.Errorf("assets_gen.go does not match static/" + fix)
	}
	var packedNames []string
	err = fs.WalkDir(os.DirFS("gz"), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			packedNames = append(packedNames, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(packedNames) != len(want.Files) {
		t.Errorf("gz/ holds %d files, static/ %d besides the index%s", len(packedNames), len(want.Files), fix)
	}
	for _, f := range want.Files {
		z, err := os.ReadFile(filepath.Join("gz", filepath.FromSlash(f.Name)+".gz"))
		if err != nil {
			t.Errorf("%v%s", err, fix)
			continue
		}
		if !bytes.Equal(gunzip(t, z), files[f.Name]) {
			t.Errorf("gz/%s.gz is not static/%s%s", f.Name, f.Name, fix)
		}
		if len(z) != f.GzipSize {
			t.Errorf("gz/%s.gz: %d bytes, the manifest says %d%s", f.Name, len(z), f.GzipSize, fix)
		}
	}
}

func get(t *testing.T, app *web.App, method, name string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
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

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
