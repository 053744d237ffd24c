package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// phonePhoto is a JPEG as a phone writes it for a portrait shot: w×h pixels stored
// sideways with EXIF orientation 6, a camera make, a GPS position, XMP and a comment.
func phonePhoto(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, color.RGBA{uint8(x), uint8(y), 90, 255})
		}
	}
	// The stored first columns are red: upright, they are the top rows.
	for y := range h {
		for x := range 16 {
			img.SetRGBA(x, y, color.RGBA{255, 0, 0, 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
		tb.Fatal(err)
	}
	var tiff bytes.Buffer
	le := binary.LittleEndian
	tiff.WriteString("II*\x00")
	binary.Write(&tiff, le, uint32(8))
	binary.Write(&tiff, le, uint16(3))
	for _, e := range [][4]uint32{{0x010F, 2, 10, 50}, {0x0112, 3, 1, 6}, {0x8825, 4, 1, 60}} {
		binary.Write(&tiff, le, uint16(e[0]))
		binary.Write(&tiff, le, uint16(e[1]))
		binary.Write(&tiff, le, e[2])
		binary.Write(&tiff, le, e[3])
	}
	binary.Write(&tiff, le, uint32(0))
	tiff.WriteString("SecretCam\x00")
	binary.Write(&tiff, le, uint16(1))
	tiff.Write([]byte{2, 0, 2, 0, 2, 0, 0, 0, 'N', 0, 0, 0})
	binary.Write(&tiff, le, uint32(0))
	seg := func(marker byte, data []byte) []byte {
		out := []byte{0xFF, marker, 0, 0}
		binary.BigEndian.PutUint16(out[2:], uint16(len(data)+2))
		return append(out, data...)
	}
	raw := buf.Bytes()
	out := append([]byte{}, raw[:2]...)
	out = append(out, seg(0xE1, append([]byte("Exif\x00\x00"), tiff.Bytes()...))...)
	out = append(out, seg(0xE1, []byte("http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta>secret</x:xmpmeta>"))...)
	out = append(out, seg(0xFE, []byte("secret comment"))...)
	return append(out, raw[2:]...)
}

// noisyJPEG is a JPEG that does not compress much (about a byte per pixel).
func noisyJPEG(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7919 % 251)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func pngPhoto(tb testing.TB, w, h int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, w, h))); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// send sends a raw body with a content type.
func (ts *testServer) send(method, path, token, contentType string, body []byte, headers ...string) response {
	ts.tb.Helper()
	req := httptest.NewRequestWithContext(context.Background(), method, path, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Token "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	ts.srv.Handler().ServeHTTP(rec, req)
	return response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

type photoAnswer struct {
	ID          uint64 `json:"id"`
	Log         uint64 `json:"log"`
	ContentType string `json:"content_type"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	Size        int64  `json:"size"`
}

// TestLogPhotos: a phone photo is stored upright without its metadata, with a
// thumbnail; who may add and delete; photos go with their log; on both stores.
func TestLogPhotos(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		f := newLogbookFarm(t, b)
		ts := f.ts
		l := f.create(f.reader, map[string]any{"type": "observation", "title": "Blight"})
		photos := f.logPath(l.ID) + "/photos"
		file := phonePhoto(t, 640, 480)
		var p photoAnswer
		ts.send("POST", photos, f.reader, "image/jpeg", file).decode(t, &p)
		if p.ID == 0 || p.Log != l.ID || p.ContentType != "image/jpeg" || p.Width != 480 || p.Height != 640 || p.Size == 0 {
			t.Fatalf("stored %+v", p)
		}
		var got store.Log
		ts.must(http.StatusOK, "GET", f.logPath(l.ID), f.creader, nil).decode(t, &got)
		if len(got.Photos) != 1 || got.Photos[0] != p.ID {
			t.Fatalf("log's photos %v", got.Photos)
		}
		// Every reader gets it back upright, clean.
		res := ts.send("GET", photos+"/"+u64(p.ID), f.creader, "", nil)
		if res.code != http.StatusOK || res.header.Get("Content-Type") != "image/jpeg" || !strings.Contains(res.header.Get("Content-Disposition"), "photo-"+u64(p.ID)+".jpg") {
			t.Fatalf("GET photo: %d %v", res.code, res.header)
		}
		for _, secret := range []string{"Exif", "SecretCam", "secret", "xmpmeta"} {
			if bytes.Contains(res.body, []byte(secret)) {
				t.Errorf("stored photo holds %q", secret)
			}
		}
		img, err := jpeg.Decode(bytes.NewReader(res.body))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != 480 || b.Dy() != 640 {
			t.Fatalf("stored %v", b)
		}
		if r, g, _, _ := img.At(240, 0).RGBA(); r>>8 < 200 || g>>8 > 60 {
			t.Fatalf("the top row is not the red one: %v", img.At(240, 0))
		}
		// The thumbnail, and an ETag that answers 304.
		res = ts.send("GET", photos+"/"+u64(p.ID)+"?size=thumb", f.reader, "", nil)
		thumb, err := jpeg.Decode(bytes.NewReader(res.body))
		if err != nil || thumb.Bounds().Dx() != 240 || thumb.Bounds().Dy() != 320 {
			t.Fatalf("thumb %v, %v", thumb.Bounds(), err)
		}
		etag := res.header.Get("ETag")
		if res = ts.send("GET", photos+"/"+u64(p.ID)+"?size=thumb", f.reader, "", nil, "If-None-Match", etag); res.code != http.StatusNotModified {
			t.Fatalf("If-None-Match: %d", res.code)
		}
		wantProblem(t, ts.send("GET", photos+"/"+u64(p.ID)+"?size=huge", f.reader, "", nil), http.StatusBadRequest, "thumb or full")

		// Who may add: the author and admins; others 403 or 404, before any byte is read.
		wantProblem(t, ts.send("POST", photos, f.creader, "image/jpeg", file), http.StatusForbidden, "author or an admin")
		wantProblem(t, ts.send("POST", photos, f.stranger, "image/jpeg", file), http.StatusNotFound, "not found")
		var byAdmin photoAnswer
		ts.send("POST", photos, f.owner, "image/png", pngPhoto(t, 300, 200)).decode(t, &byAdmin)
		if byAdmin.ContentType != "image/png" || byAdmin.Width != 300 {
			t.Fatalf("png %+v", byAdmin)
		}
		// What is refused, and why.
		wantProblem(t, ts.send("POST", photos, f.reader, "image/gif", []byte("GIF89a")), http.StatusUnsupportedMediaType, "image/jpeg or image/png")
		wantProblem(t, ts.send("POST", photos, f.reader, "image/jpeg", pngPhoto(t, 10, 10)), http.StatusBadRequest, "the body is image/png but Content-Type says image/jpeg")
		wantProblem(t, ts.send("POST", photos, f.reader, "image/jpeg", []byte("GIF89a......")), http.StatusBadRequest, "it is a GIF")
		wantProblem(t, ts.send("POST", photos, f.reader, "image/jpeg", file[:len(file)/2]), http.StatusBadRequest, "damaged")

		// Deleting: the log's author and admins.
		wantProblem(t, ts.send("DELETE", photos+"/"+u64(p.ID), f.creader, "", nil), http.StatusForbidden, "author or an admin")
		ts.must(http.StatusOK, "DELETE", photos+"/"+u64(p.ID), f.reader, nil)
		ts.must(http.StatusNotFound, "GET", photos+"/"+u64(p.ID), f.reader, nil)
		if n := photoCount(t, ts); n != 2 {
			t.Fatalf("%d photo contents after one deleted, want 2 (the PNG and its thumbnail)", n)
		}
		// The log goes: its photos go.
		ts.must(http.StatusOK, "DELETE", f.logPath(l.ID), f.reader, nil)
		if n := photoCount(t, ts); n != 0 {
			t.Fatalf("%d photo contents after the log went", n)
		}
		if n, err := ts.store().PhotoBytes(); err != nil || n != 0 {
			t.Fatalf("photo bytes %d, %v", n, err)
		}
	})
}

// photoCount counts the photo content kept: files, or the database's paths.
func photoCount(t *testing.T, ts *testServer) int {
	t.Helper()
	if ts.backend.dsn == "" {
		entries, err := os.ReadDir(filepath.Join(ts.cfg.DataDir, store.PhotoDir))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") {
				n++
			}
		}
		return n
	}
	paths, err := ts.store().PhotoPaths()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for p := range paths {
		if _, _, err := ts.store().(store.PhotoContent).OpenPhoto(context.Background(), p); err == nil {
			n++
		}
	}
	return n
}

// TestLogPhotoLimits: the body limit, the pixel limit and the storage budget.
func TestLogPhotoLimits(t *testing.T) {
	f := newLogbookFarm(t, boltBackend, func(c *server.Config) {
		c.MaxPhotoBytes = 64 << 10
		c.MaxPhotoPixels = 1 << 16
		c.PhotoStorageBytes = 6000
	})
	ts := f.ts
	l := f.create(f.reader, map[string]any{"type": "observation", "title": "x"})
	photos := f.logPath(l.ID) + "/photos"
	wantProblem(t, ts.send("POST", photos, f.reader, "image/jpeg", append(phonePhoto(t, 64, 48), make([]byte, 70<<10)...)), http.StatusRequestEntityTooLarge, "64 KiB")
	wantProblem(t, ts.send("POST", photos, f.reader, "image/png", pngPhoto(t, 300, 300)), http.StatusBadRequest, "300×300 pixels")
	ts.send("POST", photos, f.reader, "image/jpeg", phonePhoto(t, 64, 48)).decode(t, &photoAnswer{})
	wantProblem(t, ts.send("POST", photos, f.reader, "image/jpeg", noisyJPEG(t, 200, 150)), http.StatusInsufficientStorage, "--photo-max-bytes")
	// Nothing of the refused photos is left behind.
	if n := photoCount(t, ts); n != 2 {
		t.Fatalf("%d photo files, want 2", n)
	}
}

// TestPhotoSweep: a photo file no photo refers to (a crash between writing it and
// recording it) is deleted at start; referenced ones stay.
func TestPhotoSweep(t *testing.T) {
	f := newLogbookFarm(t, boltBackend)
	l := f.create(f.reader, map[string]any{"type": "observation", "title": "x"})
	f.ts.send("POST", f.logPath(l.ID)+"/photos", f.reader, "image/jpeg", phonePhoto(t, 64, 48)).decode(t, &photoAnswer{})
	orphan := filepath.Join(f.ts.cfg.DataDir, store.PhotoDir, strings.Repeat("ab", 16)+".jpg")
	if err := os.WriteFile(orphan, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.ts.restart()
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphan photo file: %v", err)
	}
	if n := photoCount(t, f.ts); n != 2 {
		t.Fatalf("%d photo files after the sweep, want 2", n)
	}
}

// TestThumbOfRestoredPhoto: a photo without a thumbnail (restored so) gets one on
// demand, decoded within this box's limits: one beyond them (a backup of a box that
// allowed more, an archive edited by hand) was decoded whatever its size and kind.
func TestThumbOfRestoredPhoto(t *testing.T) {
	f := newLogbookFarm(t, boltBackend, func(c *server.Config) { c.MaxPhotoPixels = 1 << 16 })
	ts := f.ts
	l := f.create(f.reader, map[string]any{"type": "observation", "title": "x"})
	restored := func(n, w, h int) uint64 {
		var b bytes.Buffer
		if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
			t.Fatal(err)
		}
		rel := filepath.ToSlash(filepath.Join(store.PhotoDir, strings.Repeat("0", 31)+string(rune('0'+n))+".jpg"))
		if err := os.WriteFile(filepath.Join(ts.cfg.DataDir, rel), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := ts.store().AddPhoto(f.garden.ID, l.ID, store.Photo{ContentType: "image/jpeg", Width: w, Height: h, Size: int64(b.Len()), Path: rel, Uploader: 1}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	photos := f.logPath(l.ID) + "/photos/"
	small, big := restored(1, 200, 150), restored(2, 1000, 800)
	if res := ts.send("GET", photos+u64(small)+"?size=thumb", f.reader, "", nil); res.code != http.StatusOK || res.header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("thumbnail within the limits: %d %s", res.code, res.body)
	}
	wantProblem(t, ts.send("GET", photos+u64(big)+"?size=thumb", f.reader, "", nil), http.StatusUnprocessableEntity, "1000×800 pixels")
	if res := ts.send("GET", photos+u64(big), f.reader, "", nil); res.code != http.StatusOK {
		t.Fatalf("the photo itself: %d", res.code)
	}
}
