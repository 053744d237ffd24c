package server_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server"
)

func fixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "images", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func dataURL(b []byte) string { return imagestore.DataURLPrefix + base64.StdEncoding.EncodeToString(b) }

func upload(image string, coords any) map[string]any {
	return map[string]any{"image": image, "coordinates": coords}
}

// imageWorld is a server with a garden administered by admin and read by reader.
type imageWorld struct {
	ts            *testServer
	admin, reader string
	path          string // the garden's image endpoint
}

func newImageWorld(t *testing.T, configure ...func(*server.Config)) *imageWorld {
	ts := newTestServer(t, configure...)
	w := &imageWorld{ts: ts, admin: ts.register("admin"), reader: ts.register("reader")}
	c := ts.createCompany(w.admin, "c")
	g := ts.createGarden(w.admin, c.ID, "g")
	ts.grant(w.admin, c.ID, g.ID, "reader", "u")
	w.path = gardenPath(c.ID, g.ID) + "/image"
	return w
}

// files lists the image directory.
func (w *imageWorld) files(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(w.ts.cfg.DataDir, server.ImageDirName))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, server.ImageDirName+"/"+e.Name())
	}
	return names
}

func (w *imageWorld) upload(t *testing.T, png []byte) string {
	t.Helper()
	var res struct {
		ImagePath string `json:"image_path"`
	}
	w.ts.must(http.StatusCreated, "POST", w.path, w.admin, upload(dataURL(png), cornersJSON)).decode(t, &res)
	return res.ImagePath
}

// download returns the image bytes the API serves.
func (w *imageWorld) download(t *testing.T) []byte {
	t.Helper()
	var doc struct{ Image string }
	w.ts.must(http.StatusOK, "GET", w.path, w.reader, nil).decode(t, &doc)
	b, err := imagestore.DecodeDataURL(doc.Image)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestImageRoundTrip(t *testing.T) {
	w := newImageWorld(t)
	w.ts.must(http.StatusNotFound, "GET", w.path, w.reader, nil)

	png := fixture(t, "garden.png")
	coords := []map[string]any{cornersJSON[0], cornersJSON[1], {"name": "bottom_right", "latitude": 52.51, "longitude": 13.41}, cornersJSON[2]}
	res := w.ts.must(http.StatusCreated, "POST", w.path, w.admin, upload(dataURL(png), coords))
	if got := keys(t, res.body); got != "coordinates,height,image_path,width" {
		t.Errorf("upload answer keys: %s", got)
	}
	var up struct {
		ImagePath     string `json:"image_path"`
		Width, Height int
	}
	res.decode(t, &up)
	if !strings.HasPrefix(up.ImagePath, "images/") || up.Width != 64 || up.Height != 48 {
		t.Errorf("upload answer %s", res.body)
	}
	var g struct {
		ImagePath *string `json:"image_path"`
	}
	w.ts.must(http.StatusOK, "GET", strings.TrimSuffix(w.path, "/image"), w.reader, nil).decode(t, &g)
	if g.ImagePath == nil || *g.ImagePath != up.ImagePath {
		t.Errorf("garden image_path %v, want %s", g.ImagePath, up.ImagePath)
	}

	res = w.ts.must(http.StatusOK, "GET", w.path, w.reader, nil)
	if got := keys(t, res.body); got != "coordinates,image" {
		t.Errorf("download keys: %s", got)
	}
	if cl := res.header.Get("Content-Length"); cl != strconv.Itoa(len(res.body)) {
		t.Errorf("Content-Length %s for %d bytes", cl, len(res.body))
	}
	var doc struct {
		Image       string
		Coordinates []map[string]any
	}
	res.decode(t, &doc)
	if doc.Image != dataURL(png) {
		t.Error("the download is not the upload's data URL")
	}
	if b, _ := imagestore.DecodeDataURL(doc.Image); !bytes.Equal(b, png) {
		t.Error("bytes changed on the round trip")
	}
	var names []string
	for _, c := range doc.Coordinates {
		names = append(names, c["name"].(string))
	}
	if !slices.Equal(names, []string{"top_left", "top_right", "bottom_right", "bottom_left"}) {
		t.Errorf("coordinates out of order: %v", names)
	}
	if doc.Coordinates[2]["latitude"] != 52.51 {
		t.Errorf("coordinate %v", doc.Coordinates[2])
	}
}

func TestImageUploadRejects(t *testing.T) {
	w := newImageWorld(t)
	png := dataURL(fixture(t, "garden.png"))
	padded := base64.StdEncoding.EncodeToString(fixture(t, "garden.png"))
	tests := []struct {
		name  string
		body  any
		field string // named in the problem's errors
	}{
		{"JPEG disguised as PNG", upload(dataURL(fixture(t, "garden.jpg")), cornersJSON), "image"},
		{"GIF disguised as PNG", upload(dataURL(fixture(t, "garden.gif")), cornersJSON), "image"},
		{"text disguised as PNG", upload(dataURL(fixture(t, "text.png")), cornersJSON), "image"},
		{"zero width", upload(dataURL(fixture(t, "zero-width.png")), cornersJSON), "image"},
		{"truncated base64", upload(imagestore.DataURLPrefix+padded[:len(padded)-1], cornersJSON), "image"},
		{"JPEG media type", upload("data:image/jpeg;base64,"+padded, cornersJSON), "image"},
		{"not a data URL", upload(padded, cornersJSON), "image"},
		{"image missing", map[string]any{"coordinates": cornersJSON}, "image"},
		{"image not a string", map[string]any{"image": 5, "coordinates": cornersJSON}, "image"},
		{"coordinates missing", map[string]any{"image": png}, "coordinates"},
		{"missing corner", upload(png, cornersJSON[:2]), "coordinates"},
		{"latitude 91", upload(png, []map[string]any{cornersJSON[0], cornersJSON[1], {"name": "bottom_left", "latitude": 91, "longitude": 0}}), "coordinates[2].latitude"},
		{"longitude 181", upload(png, []map[string]any{cornersJSON[0], {"name": "top_right", "latitude": 0, "longitude": 181}, cornersJSON[2]}), "coordinates[1].longitude"},
		{"latitude as string", upload(png, []map[string]any{cornersJSON[0], cornersJSON[1], {"name": "bottom_left", "latitude": "52.5", "longitude": 13.4}}), "coordinates[2].latitude"},
		{"duplicate name", upload(png, []map[string]any{cornersJSON[0], cornersJSON[1], cornersJSON[2], cornersJSON[0]}), "coordinates[3].name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := w.ts.must(http.StatusBadRequest, "POST", w.path, w.admin, tc.body)
			detail, fields := res.problem(t)
			if _, ok := fields[tc.field]; !ok {
				t.Errorf("errors %v (detail %q), want field %s", fields, detail, tc.field)
			}
		})
	}
	w.ts.must(http.StatusForbidden, "POST", w.path, w.reader, upload(png, cornersJSON))
	if files := w.files(t); len(files) != 0 {
		t.Errorf("rejected uploads left files: %v", files)
	}
	w.ts.must(http.StatusNotFound, "GET", w.path, w.reader, nil)
}

func TestImageReplaceKeepsOneFile(t *testing.T) {
	w := newImageWorld(t)
	first := w.upload(t, fixture(t, "garden.png"))
	second := w.upload(t, fixture(t, "garden-paletted.png"))
	if first == second {
		t.Fatal("the replacement reused the image path")
	}
	if files := w.files(t); !slices.Equal(files, []string{second}) {
		t.Errorf("files %v, want only %s", files, second)
	}
	if !bytes.Equal(w.download(t), fixture(t, "garden-paletted.png")) {
		t.Error("download is not the replacement")
	}
}

func TestImageBodyLimit(t *testing.T) {
	w := newImageWorld(t, func(c *server.Config) { c.MaxImageBytes = 4 << 10 })
	body := upload(dataURL(bytes.Repeat([]byte{0x89}, 4<<10)), cornersJSON)
	res := w.ts.must(http.StatusRequestEntityTooLarge, "POST", w.path, w.admin, body)
	if detail, _ := res.problem(t); !strings.Contains(detail, "4 KiB") {
		t.Errorf("detail %q", detail)
	}
	// Without a Content-Length the limit bites while reading.
	req := httptest.NewRequest("POST", w.path, io.MultiReader(strings.NewReader(`{"image":"`), strings.NewReader(strings.Repeat("A", 8<<10))))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Token "+w.admin)
	rec := httptest.NewRecorder()
	w.ts.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("streamed body: status %d, want 413", rec.Code)
	}
	// The limit is the image one, not the JSON one: a small upload still works.
	w.upload(t, fixture(t, "garden.png"))
}

func TestImageDefaultLimit(t *testing.T) {
	if server.DefaultMaxImageBytes != 64<<20 {
		t.Errorf("DefaultMaxImageBytes = %d, want 64 MiB", server.DefaultMaxImageBytes)
	}
	w := newImageWorld(t)
	// A declared size over 64 MiB is refused before anything is read.
	req := httptest.NewRequest("POST", w.path, strings.NewReader("{}"))
	req.ContentLength = 64<<20 + 1
	req.Header.Set("Authorization", "Token "+w.admin)
	rec := httptest.NewRecorder()
	w.ts.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "64 MiB") {
		t.Errorf("status %d, body %s; want 413 naming 64 MiB", rec.Code, rec.Body)
	}
	// Bigger than the 1 MiB JSON limit is fine for images.
	big := upload(imagestore.DataURLPrefix+strings.Repeat("A", 2<<20), cornersJSON)
	w.ts.must(http.StatusBadRequest, "POST", w.path, w.admin, big)
}

var errInjected = errors.New("injected fault")

// TestImageUploadFaults fails each step of an upload and expects the previous image
// intact, the record pointing at a file that exists, and no file left behind.
func TestImageUploadFaults(t *testing.T) {
	for _, step := range []string{imagestore.StepWritten, imagestore.StepRenamed} {
		t.Run("put fails at "+step, func(t *testing.T) {
			w := newImageWorld(t)
			old := w.upload(t, fixture(t, "garden.png"))
			w.ts.srv.Images().SetFaultHook(func(s string) error {
				if s == step {
					return errInjected
				}
				return nil
			})
			w.ts.must(http.StatusInternalServerError, "POST", w.path, w.admin, upload(dataURL(fixture(t, "garden-paletted.png")), cornersJSON))
			if files := w.files(t); !slices.Equal(files, []string{old}) {
				t.Errorf("files %v, want %s", files, old)
			}
			if !bytes.Equal(w.download(t), fixture(t, "garden.png")) {
				t.Error("the old image changed")
			}
		})
	}

	t.Run("store update fails", func(t *testing.T) {
		w := newImageWorld(t)
		old := w.upload(t, fixture(t, "garden.png"))
		// Between writing the file and switching the record, the database goes away.
		w.ts.srv.Images().SetFaultHook(func(s string) error {
			if s == imagestore.StepRenamed {
				w.ts.srv.Store().Close()
			}
			return nil
		})
		w.ts.must(http.StatusInternalServerError, "POST", w.path, w.admin, upload(dataURL(fixture(t, "garden-paletted.png")), cornersJSON))
		if files := w.files(t); !slices.Equal(files, []string{old}) {
			t.Errorf("files %v, want only the old %s", files, old)
		}
		w.ts.start() // the database is back
		if !bytes.Equal(w.download(t), fixture(t, "garden.png")) {
			t.Error("the old image changed")
		}
	})

	t.Run("old file removal fails", func(t *testing.T) {
		w := newImageWorld(t)
		old := w.upload(t, fixture(t, "garden.png"))
		w.ts.srv.Images().SetFaultHook(func(s string) error {
			if s == imagestore.StepRemove {
				return errInjected
			}
			return nil
		})
		replacement := w.upload(t, fixture(t, "garden-paletted.png"))
		if files := w.files(t); len(files) != 2 {
			t.Fatalf("files %v: the old one should linger", files)
		}
		if !bytes.Equal(w.download(t), fixture(t, "garden-paletted.png")) {
			t.Error("download is not the replacement")
		}
		// The next start sweeps the old file away.
		w.ts.restart()
		if files := w.files(t); !slices.Equal(files, []string{replacement}) {
			t.Errorf("after restart: files %v, want %s (not %s)", files, replacement, old)
		}
	})
}

// TestImageSweepAtStart plants what a crash leaves (a temporary file, a file whose
// record never committed) and expects a restart to delete exactly those.
func TestImageSweepAtStart(t *testing.T) {
	w := newImageWorld(t)
	kept := w.upload(t, fixture(t, "garden.png"))
	dir := filepath.Join(w.ts.cfg.DataDir, server.ImageDirName)
	for _, name := range []string{".tmp-123456", strings.Repeat("ab", 16) + ".png"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("left over"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.ts.restart()
	if files := w.files(t); !slices.Equal(files, []string{kept}) {
		t.Errorf("files %v, want only %s", files, kept)
	}
	if !bytes.Equal(w.download(t), fixture(t, "garden.png")) {
		t.Error("the kept image changed")
	}
}

// TestImageUploadStreamedJSON: the streamed body is read as encoding/json read it:
// names in any case and order, escapes (PHP writes "\/"), the last of two images, and
// the same errors for malformed JSON.
func TestImageUploadStreamedJSON(t *testing.T) {
	w := newImageWorld(t, func(c *server.Config) { c.MaxBodyBytes = 4 << 10 })
	png := fixture(t, "garden.png")
	coords := `[{"name":"top_left","latitude":52.52,"longitude":13.40},{"name":"top_right","latitude":52.52,"longitude":13.41},{"name":"bottom_left","latitude":52.51,"longitude":13.40}]`
	escaped := strings.ReplaceAll(dataURL(png), "/", `\/`)
	ok := []struct{ name, body string }{
		{"image last", `{"coordinates":` + coords + `,"image":"` + dataURL(png) + `"}`},
		{"names in another case", `{"Image":"` + dataURL(png) + `","COORDINATES":` + coords + `}`},
		{"escaped slashes", `{"image":"` + escaped + `","coordinates":` + coords + `}`},
		{"unicode escapes", `{"image":"\u0064ata:image/png;base64,` + strings.TrimPrefix(dataURL(png), imagestore.DataURLPrefix) + `","coordinates":` + coords + `}`},
		{"the last image counts", `{"image":"data:image/jpeg;base64,QUJD","image":"` + dataURL(png) + `","coordinates":` + coords + `}`},
		{"unknown members ignored", `{"x":{"y":[1,2,"]"]},"image":"` + dataURL(png) + `","coordinates":` + coords + `,"z":null}`},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			w.ts.must(http.StatusCreated, "POST", w.path, w.admin, tc.body)
			if !bytes.Equal(w.download(t), png) {
				t.Error("stored bytes differ")
			}
		})
	}
	bad := []struct{ name, body, field, detail string }{
		{"empty", "", "body", "the body is empty; send a JSON object"},
		{"array", `[1]`, "body", "the body must be a JSON object"},
		{"two objects", `{"image":"` + dataURL(png) + `","coordinates":` + coords + `} {}`, "body", "the body must hold a single JSON object"},
		{"cut short", `{"image":"` + dataURL(png)[:100], "body", "the JSON body ends too early"},
		{"malformed", `{"image" "x"}`, "body", "malformed JSON at byte 10"},
		{"bad escape in the image", `{"image":"data:\x"}`, "body", "malformed JSON at byte 17"},
		{"image null", `{"image":null,"coordinates":` + coords + `}`, "image", "image is required: " + imagestore.DataURLPrefix + "<base64 PNG>"},
		{"image a number", `{"image":5,"coordinates":` + coords + `}`, "image", "image must be a string"},
		{"syntax beats type", `{"image":5,"coordinates":` + coords + `,}`, "body", ""},
		{"coordinates beat the image", `{"image":"data:image/jpeg;base64,QUJD","coordinates":5}`, "coordinates", ""},
		{"image error", `{"image":"data:image/jpeg;base64,QUJD","coordinates":` + coords + `}`, "image", `only PNG is supported: the data URL declares "image/jpeg"; it must start with "data:image/png;base64,"`},
		{"base64 beats PNG", `{"image":"` + dataURL(fixture(t, "garden.jpg")) + `*","coordinates":` + coords + `}`, "image", ""},
		{"other members over the JSON limit", `{"x":"` + strings.Repeat("x", 5<<10) + `","image":"` + dataURL(png) + `","coordinates":` + coords + `}`, "body", "the members other than image may take at most 4 KiB of JSON"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			res := w.ts.must(http.StatusBadRequest, "POST", w.path, w.admin, tc.body)
			detail, fields := res.problem(t)
			if _, ok := fields[tc.field]; !ok {
				t.Errorf("errors %v (detail %q), want field %s", fields, detail, tc.field)
			}
			if tc.detail != "" && detail != tc.detail {
				t.Errorf("detail %q, want %q", detail, tc.detail)
			}
			if tc.name == "base64 beats PNG" && !strings.Contains(detail, "invalid base64") {
				t.Errorf("detail %q, want the base64 error", detail)
			}
		})
	}
	if files := w.files(t); len(files) != 1 {
		t.Errorf("files %v, want only the last good upload", files)
	}
}

// TestImageUploadLimit: MaxUploads uploads stream at once; the next is 503 at once,
// without reading its body, and the slot is free again afterwards. (The held uploads
// have sent 64 KiB, which at --body-min-rate 1 KiB keeps their slots for a minute.)
func TestImageUploadLimit(t *testing.T) {
	w := newImageWorld(t, func(c *server.Config) { c.MaxUploads, c.BodyMinRate = 2, 1<<10 })
	h := w.ts.srv.Handler()
	var held []*blockingBody
	done := make(chan int, 2)
	for range 2 {
		b := newBlockingBody()
		held = append(held, b)
		req := httptest.NewRequest("POST", w.path, io.MultiReader(strings.NewReader(strings.Repeat(" ", 64<<10)), b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Token "+w.admin)
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			done <- rec.Code
		}()
		<-b.entered
	}
	res := w.ts.must(http.StatusServiceUnavailable, "POST", w.path, w.admin, upload(dataURL(fixture(t, "garden.png")), cornersJSON))
	if res.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q", res.header.Get("Retry-After"))
	}
	// Who may not upload learns that first, busy or not.
	w.ts.must(http.StatusForbidden, "POST", w.path, w.reader, upload(dataURL(fixture(t, "garden.png")), cornersJSON))
	for _, b := range held {
		close(b.release)
	}
	for range held {
		if code := <-done; code != http.StatusBadRequest { // their bodies were empty
			t.Errorf("held upload: %d", code)
		}
	}
	w.upload(t, fixture(t, "garden.png"))
}
