package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/imagestore/pngtest"
	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/server/tiles"
	"github.com/gardend/gardend/store/bolt"
)

// tileInfo is GET …/image/info.
type tileInfo struct {
	Width, Height, Levels int
	TileSize              int `json:"tile_size"`
	Version               *string
	Ready                 bool
	State                 string
	Error                 string
	Thumb                 *struct{ Width, Height int }
	Preview               *struct{ Width, Height, Level int }
	Corners               []struct {
		Name                string
		Latitude, Longitude float64
	}
}

// runTiles runs the server's tile builds until the test ends (handler-only test
// servers do not Run).
func runTiles(t *testing.T, srv *server.Server) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Tiles().Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return func() { cancel(); <-done }
}

func waitTiles(t *testing.T, srv *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Tiles().WaitIdle(ctx); err != nil {
		t.Fatalf("tiles not built: %v", err)
	}
}

func (w *imageWorld) info(t *testing.T) tileInfo {
	t.Helper()
	var in tileInfo
	w.ts.must(http.StatusOK, "GET", w.path+"/info", w.reader, nil).decode(t, &in)
	return in
}

func digestVersion(b []byte) string {
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:16]) + "-1"
}

// TestImageTiles uploads a picture with a transparent border (interlaced, 16-bit:
// the decoder's hardest case), lets it be tiled, and reads everything a client
// reads: info, thumbnail, preview, every tile of the last level pixel by pixel, with
// the caching headers; the old client's GET …/image is unchanged.
func TestImageTiles(t *testing.T) {
	w := newImageWorld(t)
	runTiles(t, w.ts.srv)
	src := pngtest.Photo(800, 600, 7)
	pic := pngtest.Encode(src, pngtest.Kind{ColorType: pngtest.TrueAlpha, Depth: 16, Interlaced: true}, pngtest.Options{})
	w.upload(t, pic)
	waitTiles(t, w.ts.srv)

	in := w.info(t)
	version := digestVersion(pic)
	if !in.Ready || in.State != "ready" || in.Version == nil || *in.Version != version || in.Width != 800 || in.Height != 600 || in.Levels != 3 || in.TileSize != 256 {
		t.Fatalf("info %+v, want ready, version %s, 800×600 in 3 levels of 256", in, version)
	}
	if in.Thumb == nil || in.Thumb.Width != 320 || in.Thumb.Height != 240 || in.Preview == nil || in.Preview.Width != 800 || in.Preview.Level != 2 {
		t.Fatalf("thumb %+v, preview %+v", in.Thumb, in.Preview)
	}
	if len(in.Corners) != 3 || in.Corners[0].Name != "top_left" {
		t.Fatalf("corners %+v", in.Corners)
	}

	// The original client's document, byte for byte as ever.
	const coords = `[{"name":"top_left","latitude":52.52,"longitude":13.4},{"name":"top_right","latitude":52.52,"longitude":13.41},` +
		`{"name":"bottom_left","latitude":52.51,"longitude":13.4}]`
	var want bytes.Buffer
	fmt.Fprintf(&want, `{"image":"data:image/png;base64,%s","coordinates":%s}`, base64.StdEncoding.EncodeToString(pic), coords)
	res := w.ts.must(http.StatusOK, "GET", w.path, w.reader, nil)
	if !bytes.Equal(res.body, want.Bytes()) || res.header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("GET …/image changed: %s …%q", res.header.Get("Content-Type"), res.body[len(res.body)-200:])
	}

	// Every tile of the last level, exactly where transparent (PNG), closely where
	// not (JPEG).
	formats := map[string]int{}
	for y := range 3 {
		for x := range 4 {
			res := w.ts.must(http.StatusOK, "GET", fmt.Sprintf("%s/tiles/2/%d/%d?v=%s", w.path, x, y, version), w.reader, nil)
			ct := res.header.Get("Content-Type")
			formats[ct]++
			r := image.Rect(256*x, 256*y, min(800, 256*(x+1)), min(600, 256*(y+1)))
			checkTile(t, fmt.Sprintf("tile 2/%d/%d", x, y), res.body, ct, src, r)
			if res.header.Get("Cache-Control") != "private, max-age=31536000, immutable" || res.header.Get("ETag") != fmt.Sprintf(`"%s.2.%d.%d"`, version, x, y) {
				t.Fatalf("tile headers %v", res.header)
			}
		}
	}
	if formats["image/png"] == 0 || formats["image/jpeg"] == 0 {
		t.Fatalf("tile formats %v: the border tiles are PNG, the others JPEG", formats)
	}
	for _, bad := range []string{"3/0/0", "2/4/0", "2/0/3", "01/0/0", "-1/0/0", "a/0/0", "0/0/99999999"} {
		w.ts.must(http.StatusNotFound, "GET", w.path+"/tiles/"+bad, w.reader, nil)
	}

	// Caching: immutable only under the current version; revalidation by ETag.
	for _, tc := range []struct{ query, cache string }{
		{"?v=" + version, "private, max-age=31536000, immutable"},
		{"", "private, no-cache"},
		{"?v=0123-1", "private, no-cache"}, // an older picture's URL: today's bytes, not for keeps
	} {
		for _, part := range []string{"/thumb", "/preview", "/tiles/0/0/0"} {
			if part == "/tiles/0/0/0" && strings.HasPrefix(tc.query, "?v=0123") {
				continue // below
			}
			res := w.ts.must(http.StatusOK, "GET", w.path+part+tc.query, w.reader, nil)
			if got := res.header.Get("Cache-Control"); got != tc.cache {
				t.Errorf("%s%s: Cache-Control %q, want %q", part, tc.query, got, tc.cache)
			}
			req := httptestRequest(w.path+part+tc.query, w.reader, res.header.Get("ETag"))
			if res304 := w.ts.serve(req); res304.code != http.StatusNotModified || len(res304.body) != 0 {
				t.Errorf("%s with If-None-Match: %d", part, res304.code)
			}
		}
	}
	// A tile under an older picture's version: not today's tile in the old one's place.
	res = w.ts.must(http.StatusNotFound, "GET", w.path+"/tiles/0/0/0?v=0123-1", w.reader, nil)
	if detail, _ := res.problem(t); detail != "no tile 0/0/0 of the version this URL names: the picture has changed; …/image/info names the current one" {
		t.Fatalf("stale tile: %q", detail)
	}
	thumb := w.ts.must(http.StatusOK, "GET", w.path+"/thumb", w.reader, nil)
	if img, _, err := image.Decode(bytes.NewReader(thumb.body)); err != nil || img.Bounds().Dx() != 320 {
		t.Fatalf("thumb: %v %v", err, img.Bounds())
	}
	// Only readers of the garden.
	stranger := w.ts.register("stranger")
	for _, part := range []string{"/info", "/thumb", "/preview", "/tiles/0/0/0"} {
		w.ts.must(http.StatusNotFound, "GET", w.path+part, stranger, nil)
		w.ts.must(http.StatusUnauthorized, "GET", w.path+part, "", nil)
	}
}

func httptestRequest(path, token, etag string) *http.Request {
	req, _ := http.NewRequest("GET", path, nil)
	req.Header.Set("Authorization", "Token "+token)
	req.Header.Set("If-None-Match", etag)
	return req
}

// checkTile compares an encoded tile with rectangle r of src: exactly for PNG, by
// PSNR for JPEG.
func checkTile(t *testing.T, what string, data []byte, contentType string, src *image.NRGBA, r image.Rectangle) {
	t.Helper()
	var img image.Image
	var err error
	switch contentType {
	case "image/png":
		img, err = png.Decode(bytes.NewReader(data))
	case "image/jpeg":
		img, err = jpeg.Decode(bytes.NewReader(data))
	default:
		t.Fatalf("%s: Content-Type %q", what, contentType)
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if img.Bounds().Size() != r.Size() {
		t.Fatalf("%s: %v, want %v", what, img.Bounds().Size(), r.Size())
	}
	var se float64
	var exact *image.NRGBA
	if contentType == "image/png" {
		exact = pngtest.NRGBA(img)
	}
	for y := range r.Dy() {
		for x := range r.Dx() {
			want := src.NRGBAAt(r.Min.X+x, r.Min.Y+y)
			if exact != nil {
				got := exact.NRGBAAt(x, y)
				if got != want {
					t.Fatalf("%s: pixel %d,%d is %v, want %v", what, x, y, got, want)
				}
				continue
			}
			cr, cg, cb, _ := img.At(x, y).RGBA()
			for _, d := range []float64{float64(cr>>8) - float64(want.R), float64(cg>>8) - float64(want.G), float64(cb>>8) - float64(want.B)} {
				se += d * d
			}
		}
	}
	if exact == nil {
		if psnr := 10 * math.Log10(255*255*3*float64(r.Dx()*r.Dy())/max(se, 1e-9)); psnr < 27 {
			t.Fatalf("%s: PSNR %.1f dB", what, psnr)
		}
	}
}

// serve sends a prepared request through the handler.
func (ts *testServer) serve(req *http.Request) response {
	rec := httptest.NewRecorder()
	ts.srv.Handler().ServeHTTP(rec, req)
	return response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// TestImageTilesNotReady: before the tiles are built, info says so with the
// picture's size from its header, thumbnails and tiles answer 503 with Retry-After,
// and the preview is the whole picture, not to be kept.
func TestImageTilesNotReady(t *testing.T) {
	w := newImageWorld(t) // its tile builds do not run
	pic := pngtest.Encode(pngtest.Photo(700, 100, 1), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	w.upload(t, pic)
	in := w.info(t)
	if in.Ready || in.State != "queued" || in.Version != nil || in.Width != 700 || in.Height != 100 || in.Levels != 3 || in.Thumb != nil || len(in.Corners) != 3 {
		t.Fatalf("info %+v", in)
	}
	for _, part := range []string{"/thumb", "/tiles/0/0/0"} {
		res := w.ts.must(http.StatusServiceUnavailable, "GET", w.path+part, w.reader, nil)
		if res.header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", part)
		}
	}
	res := w.ts.must(http.StatusOK, "GET", w.path+"/preview", w.reader, nil)
	if !bytes.Equal(res.body, pic) || res.header.Get("Content-Type") != "image/png" || res.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("preview while building: %v, %d bytes", res.header, len(res.body))
	}
}

// TestImageTilesDamagedPicture: a picture whose pixel data is damaged (the upload
// checks only the header) cannot be tiled: info says why, the thumbnail and tiles
// are 404, the preview is the whole picture, and a restart does not try again.
func TestImageTilesDamagedPicture(t *testing.T) {
	w := newImageWorld(t)
	stop := runTiles(t, w.ts.srv)
	pic := pngtest.Encode(pngtest.Photo(300, 200, 1), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	pic[len(pic)-20] ^= 0xff // in the last IDAT chunk: its CRC fails
	w.upload(t, pic)
	waitTiles(t, w.ts.srv)
	in := w.info(t)
	if in.Ready || in.State != "failed" || !strings.Contains(in.Error, "invalid checksum") {
		t.Fatalf("info %+v", in)
	}
	w.ts.must(http.StatusNotFound, "GET", w.path+"/thumb", w.reader, nil)
	w.ts.must(http.StatusNotFound, "GET", w.path+"/tiles/0/0/0", w.reader, nil)
	if res := w.ts.must(http.StatusOK, "GET", w.path+"/preview", w.reader, nil); !bytes.Equal(res.body, pic) {
		t.Fatal("preview is not the whole picture")
	}
	stop()
	w.ts.restart()
	if q, b := w.ts.srv.Tiles().Counts(); q+b != 0 {
		t.Fatalf("after a restart %d queued, %d building: the failure is tried again", q, b)
	}
	if in := w.info(t); in.State != "failed" {
		t.Fatalf("after a restart: %+v", in)
	}
}

// TestImagePixelLimit: a picture over --max-image-pixels is refused from its header,
// before anything is decoded or stored, with a 400 that names the limit.
func TestImagePixelLimit(t *testing.T) {
	w := newImageWorld(t, func(c *server.Config) { c.MaxImagePixels = 20_000 })
	pic := pngtest.Encode(pngtest.Photo(200, 101, 1), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	res := w.ts.must(http.StatusBadRequest, "POST", w.path, w.admin, upload(dataURL(pic), cornersJSON))
	detail, fields := res.problem(t)
	const want = "the picture has 200 × 101 = 20200 pixels; this server accepts at most 20000 pixels (--max-image-pixels)"
	if detail != want || fields["image"] != want {
		t.Fatalf("detail %q, fields %v", detail, fields)
	}
	if files := w.files(t); len(files) != 0 {
		t.Fatalf("files left: %v", files)
	}
	// The default: 400 megapixels. A header claiming 30,000 × 20,000 with no pixels.
	d := newImageWorld(t)
	huge := pngtest.Encode(pngtest.Photo(3, 2, 1), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	huge = withSize(huge, 30000, 20000)
	res = d.ts.must(http.StatusBadRequest, "POST", d.path, d.admin, upload(dataURL(huge), cornersJSON))
	if detail, _ := res.problem(t); detail != "the picture has 30000 × 20000 = 600 megapixels; this server accepts at most 400 megapixels (--max-image-pixels)" {
		t.Fatalf("detail %q", detail)
	}
	huge = withSize(huge, 70000, 10)
	res = d.ts.must(http.StatusBadRequest, "POST", d.path, d.admin, upload(dataURL(huge), cornersJSON))
	if detail, _ := res.problem(t); detail != "the picture is 70000 × 10 pixels; a side may be at most 65535 pixels" {
		t.Fatalf("detail %q", detail)
	}
}

// withSize rewrites a PNG's IHDR (and its CRC) to claim another size.
func withSize(b []byte, w, h int) []byte {
	b = bytes.Clone(b)
	putBE := func(o int, v uint32) { b[o], b[o+1], b[o+2], b[o+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v) }
	putBE(16, uint32(w))
	putBE(20, uint32(h))
	putBE(29, crc32.ChecksumIEEE(b[12:29]))
	return b
}

// TestImageTilesRestartDuringBuild stops the server while a picture is being tiled,
// with the leftovers a killed build would leave: the next start sweeps them, tiles
// the picture again from the start, and serves it.
func TestImageTilesRestartDuringBuild(t *testing.T) {
	w := newImageWorld(t)
	reached := make(chan struct{})
	w.ts.srv.Tiles().SetHook(func(ctx context.Context, path string, rows, total int) {
		if rows == 256 {
			close(reached)
			<-ctx.Done() // held until the server stops
		}
	})
	stop := runTiles(t, w.ts.srv)
	src := pngtest.Photo(300, 600, 3)
	pic := pngtest.Encode(src, pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	w.upload(t, pic)
	<-reached
	if in := w.info(t); in.State != "building" {
		t.Fatalf("info while building: %+v", in)
	}
	dir := filepath.Join(w.ts.cfg.DataDir, tiles.DirName)
	if err := os.WriteFile(filepath.Join(dir, ".tmp-killed.pyr"), []byte("half a pack"), 0o600); err != nil {
		t.Fatal(err)
	}
	stop()
	w.ts.restart()
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("after the restart's sweep: %v", names)
	}
	runTiles(t, w.ts.srv)
	waitTiles(t, w.ts.srv)
	in := w.info(t)
	if !in.Ready || *in.Version != digestVersion(pic) {
		t.Fatalf("info after the restart: %+v", in)
	}
	res := w.ts.must(http.StatusOK, "GET", w.path+"/tiles/2/0/1", w.reader, nil)
	checkTile(t, "tile 2/0/1", res.body, res.header.Get("Content-Type"), src, image.Rect(0, 256, 256, 512))
	if names := dirNames(t, dir); len(names) != 1 || !strings.HasSuffix(names[0], ".pyr") {
		t.Fatalf("tiles/ holds %v", names)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestImageTilesUploadDuringBuild: a new picture uploaded while the old one is being
// tiled cancels that build; only the new picture's pyramid appears.
func TestImageTilesUploadDuringBuild(t *testing.T) {
	w := newImageWorld(t)
	first := pngtest.Encode(pngtest.Photo(300, 600, 1), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	second := pngtest.Encode(pngtest.Photo(500, 200, 2), pngtest.Kind{ColorType: pngtest.Palette, Depth: 8}, pngtest.Options{})
	reached, cancelled := make(chan string, 2), make(chan string, 2)
	w.ts.srv.Tiles().SetHook(func(ctx context.Context, path string, rows, total int) {
		if rows == 256 && total == 600 {
			reached <- path
			<-ctx.Done()
			cancelled <- path
		}
	})
	runTiles(t, w.ts.srv)
	firstPath := w.upload(t, first)
	if got := <-reached; got != firstPath {
		t.Fatalf("building %s, want %s", got, firstPath)
	}
	w.upload(t, second)
	if got := <-cancelled; got != firstPath {
		t.Fatalf("cancelled %s", got)
	}
	waitTiles(t, w.ts.srv)
	in := w.info(t)
	if !in.Ready || *in.Version != digestVersion(second) || in.Width != 500 {
		t.Fatalf("info %+v", in)
	}
	names := dirNames(t, filepath.Join(w.ts.cfg.DataDir, tiles.DirName))
	if len(names) != 1 || strings.HasPrefix(names[0], strings.TrimSuffix(filepath.Base(firstPath), ".png")) {
		t.Fatalf("tiles/ holds %v", names)
	}
}

// TestImageTilesGoWithPicture: replacing a picture or deleting its garden deletes its
// tiles; the sweep at start deletes tiles of pictures gone while stopped.
func TestImageTilesGoWithPicture(t *testing.T) {
	w := newImageWorld(t)
	runTiles(t, w.ts.srv)
	dir := filepath.Join(w.ts.cfg.DataDir, tiles.DirName)
	pic := func(seed uint64) []byte {
		return pngtest.Encode(pngtest.Photo(40, 30, seed), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	}
	old := w.upload(t, pic(1))
	waitTiles(t, w.ts.srv)
	w.upload(t, pic(2))
	waitTiles(t, w.ts.srv)
	names := dirNames(t, dir)
	if len(names) != 1 || strings.HasPrefix(names[0], strings.TrimSuffix(filepath.Base(old), ".png")) {
		t.Fatalf("after a replacement tiles/ holds %v", names)
	}
	stray := strings.Repeat("ab", 16)
	for _, name := range []string{stray + ".pyr", stray + ".failed"} {
		os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600)
	}
	w.ts.restart()
	if got := dirNames(t, dir); !slices.Equal(got, names) {
		t.Fatalf("after the start's sweep: %v, want %v", got, names)
	}
	w.ts.must(http.StatusOK, "DELETE", strings.TrimSuffix(w.path, "/image"), w.admin, nil)
	if got := dirNames(t, dir); len(got) != 0 {
		t.Fatalf("after deleting the garden: %v", got)
	}
}

// TestImageTilesCluster: on a shared database each node keeps its own tiles, a cache
// built when first asked for: the uploading node builds at once, another when a
// reader asks, both serve the same version; a replacement is swept from the other
// node's cache by its periodic sweep.
func TestImageTilesCluster(t *testing.T) {
	nodes := cluster(t, 2)
	a, b := nodes[0], nodes[1]
	for _, n := range nodes {
		runTiles(t, n.srv)
	}
	owner := a.register("owner")
	c := a.createCompany(owner, "c")
	g := a.createGarden(owner, c.ID, "g")
	path := gardenPath(c.ID, g.ID) + "/image"
	pic := pngtest.Encode(pngtest.Photo(300, 300, 4), pngtest.Kind{ColorType: pngtest.Grey, Depth: 4, Interlaced: true}, pngtest.Options{})
	a.must(http.StatusCreated, "POST", path, owner, upload(dataURL(pic), cornersJSON))
	waitTiles(t, a.srv)
	var in tileInfo
	a.must(http.StatusOK, "GET", path+"/info", owner, nil).decode(t, &in)
	if !in.Ready || *in.Version != digestVersion(pic) {
		t.Fatalf("node a: %+v", in)
	}
	if q, bl := b.srv.Tiles().Counts(); q+bl != 0 {
		t.Fatalf("node b builds before anybody asks it: %d queued, %d building", q, bl)
	}
	b.must(http.StatusServiceUnavailable, "GET", path+"/tiles/1/0/0", owner, nil)
	waitTiles(t, b.srv)
	b.must(http.StatusOK, "GET", path+"/info", owner, nil).decode(t, &in)
	if !in.Ready || *in.Version != digestVersion(pic) {
		t.Fatalf("node b: %+v", in)
	}
	ta := a.must(http.StatusOK, "GET", path+"/tiles/1/0/0", owner, nil)
	tb := b.must(http.StatusOK, "GET", path+"/tiles/1/0/0", owner, nil)
	if !bytes.Equal(ta.body, tb.body) || ta.header.Get("ETag") != tb.header.Get("ETag") {
		t.Fatal("the nodes serve different tiles")
	}
	// Replaced through node a: node b's copy of the old one goes at its next sweep.
	a.must(http.StatusCreated, "POST", path, owner, upload(dataURL(pngtest.Encode(pngtest.Photo(20, 20, 1), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})), cornersJSON))
	dirB := filepath.Join(b.cfg.DataDir, tiles.DirName)
	if names := dirNames(t, dirB); len(names) != 1 {
		t.Fatalf("node b holds %v", names)
	}
	if n, err := b.srv.Tiles().Sweep(false); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if names := dirNames(t, dirB); len(names) != 0 {
		t.Fatalf("node b holds %v after its sweep", names)
	}
}

// TestImageTilesRebuiltAfterRestore: backups leave tiles out (they are made again
// from the pictures); a server on the restored directory builds them at start.
func TestImageTilesRebuiltAfterRestore(t *testing.T) {
	w := newImageWorld(t)
	runTiles(t, w.ts.srv)
	pic := pngtest.Encode(pngtest.Photo(300, 200, 5), pngtest.Kind{ColorType: pngtest.Palette, Depth: 4, TRNS: true}, pngtest.Options{})
	w.upload(t, pic)
	waitTiles(t, w.ts.srv)
	if names := dirNames(t, filepath.Join(w.ts.cfg.DataDir, tiles.DirName)); len(names) != 1 {
		t.Fatalf("tiles/ holds %v", names)
	}
	root := w.ts.siteAdmin("root")
	archive := w.ts.must(http.StatusOK, "GET", "/admin/backup", root, nil).body
	m, err := backup.Verify(bytes.NewReader(archive), backup.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Entries {
		if strings.HasPrefix(e.Path, tiles.DirName+"/") {
			t.Fatalf("the backup holds %s", e.Path)
		}
	}
	target := filepath.Join(t.TempDir(), "restored")
	check := func(path string, _ *backup.Manifest) error {
		st, err := bolt.Open(path, bolt.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		defer st.Close()
		return st.Check()
	}
	if _, err := backup.Restore(bytes.NewReader(archive), target, backup.RestoreOptions{CheckDB: check}); err != nil {
		t.Fatal(err)
	}
	restored := &imageWorld{ts: newTestServer(t, func(c *server.Config) { c.DataDir = target }), admin: w.admin, reader: w.reader, path: w.path}
	if q, _ := restored.ts.srv.Tiles().Counts(); q != 1 {
		t.Fatalf("%d pictures queued at the restored server's start, want 1", q)
	}
	runTiles(t, restored.ts.srv)
	waitTiles(t, restored.ts.srv)
	if in := restored.info(t); !in.Ready || *in.Version != digestVersion(pic) {
		t.Fatalf("info after the restore: %+v", in)
	}
}
