// Package web is gardend's browser app: plain HTML, CSS and JavaScript modules
// embedded in the binary (no build step), served at / with a strict
// Content-Security-Policy. Every asset URL carries a hash of all assets, so assets
// are cached for good and a new binary's app is fetched at once.
//
// The app talks to the public API only, with the token in an Authorization header.
// Vendored libraries live under static/vendor with their licences; `go generate`
// refreshes them from npm (vendorgen).
package web

//go:generate go run ./vendorgen

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of the app: its own origin only, no inline
// script or style, images also from blob: URLs (garden pictures decoded in the page).
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// AssetPrefix is the path under which assets are served: AssetPrefix + version + "/" + name.
const AssetPrefix = "/app/"

// Options are what the page needs to know about the server.
type Options struct {
	// RegistrationOpen shows the "create an account" form.
	RegistrationOpen bool
}

// App serves the page and its assets.
type App struct {
	set   *assetSet
	index *asset
}

// asset is one file with its compressed form, made on first use.
type asset struct {
	name, contentType, etag string
	body                    []byte
	gzOnce                  sync.Once
	gz                      []byte
}

type assetSet struct {
	version string
	files   map[string]*asset
	indexT  []byte
}

// loadAssets reads and hashes the embedded files once per process: they never change.
var loadAssets = sync.OnceValues(func() (*assetSet, error) {
	set := &assetSet{files: map[string]*asset{}}
	h := sha256.New()
	var names []string
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, p := range names {
		body, err := static.ReadFile(p)
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(p, "static/")
		_, _ = fmt.Fprintf(h, "%s\x00%d\x00", name, len(body)) // a hash never fails
		h.Write(body)
		if name == "index.html" {
			set.indexT = body
			continue
		}
		set.files[name] = newAsset(name, body)
	}
	if set.indexT == nil {
		return nil, errors.New("web: static/index.html is missing")
	}
	set.version = hex.EncodeToString(h.Sum(nil))[:16]
	return set, nil
})

func newAsset(name string, body []byte) *asset {
	sum := sha256.Sum256(body)
	return &asset{name: name, body: body, contentType: contentType(name), etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".json":
		return "application/json; charset=utf-8"
	case "", ".txt", ".md":
		return "text/plain; charset=utf-8" // LICENSE, VERSION
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// New prepares the app.
func New(o Options) (*App, error) {
	set, err := loadAssets()
	if err != nil {
		return nil, err
	}
	reg := "closed"
	if o.RegistrationOpen {
		reg = "open"
	}
	page := bytes.ReplaceAll(set.indexT, []byte("{{VERSION}}"), []byte(set.version))
	page = bytes.ReplaceAll(page, []byte("{{REGISTRATION}}"), []byte(reg))
	return &App{set: set, index: newAsset("index.html", page)}, nil
}

// Version is the hash in the asset URLs.
func (a *App) Version() string { return a.set.version }

// Files lists the asset names (index.html excluded), sorted.
func (a *App) Files() []string {
	out := make([]string, 0, len(a.set.files))
	for n := range a.set.files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Asset returns an asset's bytes, for tests and the page-weight budget.
func (a *App) Asset(name string) ([]byte, bool) {
	f, ok := a.set.files[name]
	if !ok {
		return nil, false
	}
	return f.body, true
}

// GzipSize is the size of an asset as served to a browser that accepts gzip.
func (a *App) GzipSize(name string) int {
	f, ok := a.set.files[name]
	if !ok {
		return 0
	}
	return len(f.compressed())
}

// ServeIndex serves the page. It is revalidated on every load (it names the assets'
// version), cheaply through its ETag.
func (a *App) ServeIndex(w http.ResponseWriter, r *http.Request) {
	a.serve(w, r, a.index, "no-cache")
}

// ServeAsset serves name of version; ok is false when there is no such asset (an old
// page asking for assets of a binary no longer running, or a wrong name).
func (a *App) ServeAsset(w http.ResponseWriter, r *http.Request, version, name string) (ok bool) {
	f, found := a.set.files[name]
	if version != a.set.version || !found {
		return false
	}
	a.serve(w, r, f, "public, max-age=31536000, immutable")
	return true
}

func (a *App) serve(w http.ResponseWriter, r *http.Request, f *asset, cache string) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", cache)
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", f.etag)
	h.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		if gz := f.compressed(); len(gz) < len(body) {
			body = gz
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body) // a client gone: nothing left to tell it
	}
}

// compressed is the asset gzipped at the best level, made once.
func (f *asset) compressed() []byte {
	f.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(f.body) // into a bytes.Buffer: never fails
		_ = zw.Close()
		f.gz = buf.Bytes()
	})
	return f.gz
}

// acceptsGzip reads Accept-Encoding: gzip listed without q=0.
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, hasQ := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		if !hasQ {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}

func etagMatches(header, etag string) bool {
	for part := range strings.SplitSeq(header, ",") {
		p := strings.TrimPrefix(strings.TrimSpace(part), "W/")
		if p == etag || p == "*" {
			return true
		}
	}
	return false
}
