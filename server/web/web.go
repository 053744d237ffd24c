// Package web is gardend's browser app: plain HTML, CSS and JavaScript modules
// (no build step for the app itself), served at / with a strict
// Content-Security-Policy. Every asset URL carries a hash of all assets, so assets
// are cached for good and a new binary's app is fetched at once.
//
// The binary embeds the assets gzip-compressed (gz/, made from static/ by
// `go generate -run gzipgen ./server/web`, checked by TestPackedAssets): they are
// served as they are to every browser, and decompressed on the fly for a client
// without gzip. Start-up reads none of them.
//
// The app talks to the public API only, with the token in an Authorization header.
// Vendored libraries live under static/vendor with their licences; `go generate`
// refreshes them from npm (vendorgen), then packs them (gzipgen).
package web

//go:generate go run ./vendorgen
//go:generate go run ./gzipgen

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// packed holds gz/<name>.gz for every file of static/ but the index (assets_gen.go
// lists them).
//
//go:embed gz
var packed embed.FS

// indexTemplate is static/index.html, filled in by New.
//
//go:embed static/index.html
var indexTemplate string

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
	files map[string]*asset
	index *asset
}

// packedFile is a line of assets_gen.go.
type packedFile struct {
	name           string
	size, gzipSize int
	sum            string
}

// asset is one file as served. Its bytes are read from packed when served, except
// the index's, which New makes.
type asset struct {
	packedFile
	contentType string
	// etag is weak, and the same for both representations: they are the same
	// content (a cache may revalidate one with the other's ETag), but not the same
	// bytes, so a range of one must not be resumed on the other (If-Range ignores
	// weak ETags).
	etag   string
	body   []byte // the index only
	gzOnce sync.Once
	gz     []byte // the index only, made on first use
}

func newAsset(f packedFile) *asset {
	return &asset{packedFile: f, contentType: contentType(f.name), etag: `W/"` + f.sum + `"`}
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

// New prepares the app: a map of the packed files and the page; nothing is read or
// compressed.
func New(o Options) (*App, error) {
	if indexTemplate == "" || len(assetTable) == 0 {
		return nil, errors.New("web: the packed assets are missing (go generate -run gzipgen ./server/web)")
	}
	files := make(map[string]*asset, len(assetTable))
	for _, f := range assetTable {
		files[f.name] = newAsset(f)
	}
	reg := "closed"
	if o.RegistrationOpen {
		reg = "open"
	}
	page := strings.ReplaceAll(indexTemplate, "{{VERSION}}", assetsVersion)
	page = strings.ReplaceAll(page, "{{REGISTRATION}}", reg)
	sum := sha256Prefix([]byte(page))
	index := newAsset(packedFile{name: "index.html", size: len(page), sum: sum})
	index.body = []byte(page)
	return &App{files: files, index: index}, nil
}

// Version is the hash in the asset URLs.
func (a *App) Version() string { return assetsVersion }

// Files lists the asset names (index.html excluded), sorted.
func (a *App) Files() []string {
	out := make([]string, 0, len(a.files))
	for n := range a.files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Asset returns an asset's bytes, uncompressed, for tests and the page-weight budget.
func (a *App) Asset(name string) ([]byte, bool) {
	f, ok := a.files[name]
	if !ok {
		return nil, false
	}
	zr, err := gzip.NewReader(f.open())
	if err != nil {
		return nil, false
	}
	b, err := io.ReadAll(zr)
	return b, err == nil
}

// GzipSize is the size of an asset as served to a browser that accepts gzip.
func (a *App) GzipSize(name string) int {
	if f, ok := a.files[name]; ok {
		return f.gzipSize
	}
	return 0
}

// ServeIndex serves the page. It is revalidated on every load (it names the assets'
// version), cheaply through its ETag.
func (a *App) ServeIndex(w http.ResponseWriter, r *http.Request) {
	a.serve(w, r, a.index, "no-cache")
}

// ServeAsset serves name of version; ok is false when there is no such asset (an old
// page asking for assets of a binary no longer running, or a wrong name).
func (a *App) ServeAsset(w http.ResponseWriter, r *http.Request, version, name string) (ok bool) {
	f, found := a.files[name]
	if version != assetsVersion || !found {
		return false
	}
	a.serve(w, r, f, "public, max-age=31536000, immutable")
	return true
}

// serve answers with the gzip representation when the client takes it, else the
// file itself; http.ServeContent does conditional requests (the ETag), HEAD and
// ranges (of the representation sent).
func (a *App) serve(w http.ResponseWriter, r *http.Request, f *asset, cache string) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", cache)
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", f.etag)
	h.Add("Vary", "Accept-Encoding")
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		if gz := f.compressed(); gz != nil && f.gzipSize < f.size {
			h.Set("Content-Encoding", "gzip")
			// ServeContent leaves the length out when an encoding is set (it cannot
			// know that it is the length of the encoded bytes; here it is).
			h.Set("Content-Length", strconv.Itoa(f.gzipSize))
			http.ServeContent(w, r, "", time.Time{}, gz)
			return
		}
	}
	if f.body != nil {
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
		return
	}
	if strings.Contains(r.Header.Get("Range"), ",") {
		// Several ranges of the decompressed file would each decompress it from the
		// start: serve it whole instead (a server may ignore Range).
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, "", time.Time{}, &gunzipSeeker{open: f.open, size: int64(f.size)})
}

// open reads a packed file's gzip bytes.
func (f *asset) open() io.ReadSeeker {
	file, err := packed.Open("gz/" + f.name + ".gz")
	if err != nil {
		panic("web: " + f.name + " is in assets_gen.go but not in gz/: " + err.Error()) // TestPackedAssets
	}
	return file.(io.ReadSeeker) // embed's files seek
}

// compressed is the gzip representation: the packed file, or for the index its bytes
// compressed once.
func (f *asset) compressed() io.ReadSeeker {
	if f.body == nil {
		return f.open()
	}
	f.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level: no error
		if _, err := zw.Write(f.body); err == nil && zw.Close() == nil {
			f.gz, f.gzipSize = buf.Bytes(), buf.Len()
		}
	})
	if f.gz == nil {
		return nil
	}
	return bytes.NewReader(f.gz)
}

// gunzipSeeker reads a packed file decompressed, for a client without gzip. Seeking
// only records the position: reading decompresses up to it, from the start again if
// it lies behind (one range per request, see serve).
type gunzipSeeker struct {
	open func() io.ReadSeeker
	size int64
	pos  int64 // where the next Read starts
	zr   *gzip.Reader
	at   int64 // where zr is
}

func (g *gunzipSeeker) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += g.pos
	case io.SeekEnd:
		offset += g.size
	}
	if offset < 0 {
		return 0, errors.New("web: seek before the start")
	}
	g.pos = offset
	return offset, nil
}

func (g *gunzipSeeker) Read(p []byte) (int, error) {
	if g.zr == nil || g.pos < g.at {
		zr, err := gzip.NewReader(g.open())
		if err != nil {
			return 0, err
		}
		g.zr, g.at = zr, 0
	}
	if g.pos > g.at {
		n, err := io.CopyN(io.Discard, g.zr, g.pos-g.at)
		g.at += n
		if err != nil {
			return 0, err
		}
	}
	n, err := g.zr.Read(p)
	g.at += int64(n)
	g.pos = g.at
	return n, err
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

// sha256Prefix is the hex of the first 12 bytes of b's SHA-256, as assets_gen.go's sums.
func sha256Prefix(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
