package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/imagestore/pngtest"
	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/tiles"
)

// writeField writes a photo-like w × h PNG (pngtest.Field: grain of 24 on one pixel
// in every, texture) at zlib level to a file of dir and returns its path and size.
func writeField(tb testing.TB, dir string, w, h, every, texture, level int) (string, int64) {
	tb.Helper()
	path := filepath.Join(dir, fmt.Sprintf("field-%dx%d.png", w, h))
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pngtest.WriteRows(f, w, h, false, level, pngtest.Field(w, h, 24, every, texture, 1)); err != nil {
		tb.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	return path, st.Size()
}

// uploadFile uploads the PNG at path to the garden image endpoint url, streaming it
// as base64 without holding it.
func uploadFile(tb testing.TB, url, token, path string) {
	tb.Helper()
	coords, _ := json.Marshal(cornersJSON)
	pr, pw := io.Pipe()
	go func() {
		f, err := os.Open(path)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		defer f.Close()
		io.WriteString(pw, `{"coordinates":`+string(coords)+`,"image":"`+imagestore.DataURLPrefix)
		enc := base64.NewEncoder(base64.StdEncoding, pw)
		if _, err := io.Copy(enc, f); err != nil {
			pw.CloseWithError(err)
			return
		}
		enc.Close()
		io.WriteString(pw, `"}`)
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", url, pr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Token "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		tb.Fatalf("upload: %d %s", res.StatusCode, body)
	}
}

// tilePicture uploads the PNG at path to a fresh server and waits for its pyramid; it
// returns how long that took from the upload's answer, the peak heap growth over the
// heap before the upload, and the pack's size on disk.
func tilePicture(tb testing.TB, path string, maxImage int64) (took time.Duration, growth uint64, pack int64) {
	tb.Helper()
	dir := tb.TempDir()
	srv, base, _ := runServer(tb, server.Config{DataDir: dir, MaxImageBytes: maxImage})
	ts := &testServer{tb: tb, srv: srv}
	owner := ts.register("owner")
	c := ts.createCompany(owner, "c")
	g := ts.createGarden(owner, c.ID, "g")
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	peak := heapPeak(5*time.Millisecond, stop)
	uploadFile(tb, base+gardenPath(c.ID, g.ID)+"/image", owner, path)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := srv.Tiles().WaitIdle(ctx); err != nil {
		tb.Fatal(err)
	}
	took = time.Since(start)
	close(stop)
	if p := <-peak; p > before.HeapInuse {
		growth = p - before.HeapInuse
	}
	entries, err := os.ReadDir(filepath.Join(dir, tiles.DirName))
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".pyr") {
			info, _ := e.Info()
			pack += info.Size()
		}
	}
	if pack == 0 {
		tb.Fatalf("no pack in %v", entries)
	}
	return took, growth, pack
}

// BenchmarkTilesLargePicture uploads a 12,000 × 9,000 PNG to a server with default
// settings (but --max-image) and waits for its thumbnail, preview and tiles: the time
// from the upload's answer to a complete pyramid, the peak heap growth during upload
// and build, and the pack's bytes on disk. "photo": grain and texture on every pixel,
// as a drone photo has (217 MB: --max-image raised to 512 MiB, as an operator of
// orthophotos must); "smooth": grain on one pixel in 32, no texture (27 MB, within the
// default --max-image). Writing the pictures takes a few minutes first.
//
//	go test ./server -run '^$' -bench TilesLargePicture -benchtime 1x -timeout 60m
func BenchmarkTilesLargePicture(b *testing.B) {
	for _, pc := range []struct {
		name           string
		every, texture int
	}{{"photo", 1, 16}, {"smooth", 32, 0}} {
		b.Run(pc.name, func(b *testing.B) {
			path, size := writeField(b, b.TempDir(), 12000, 9000, pc.every, pc.texture, 6)
			for b.Loop() {
				took, growth, pack := tilePicture(b, path, 512<<20)
				b.ReportMetric(took.Seconds(), "s-to-pyramid")
				b.ReportMetric(float64(growth)/mib, "MiB-peak-heap-growth")
				b.ReportMetric(float64(pack)/1e6, "MB-pack")
				b.ReportMetric(float64(size)/1e6, "MB-picture")
			}
		})
	}
}

// BenchmarkTilesWidestPicture: a picture as wide as an upload may be (65,535
// pixels), with little grain (an attacker's 3 MB PNG): memory goes with the width,
// not the height, so 300 rows reach the peak. The widest levels' bands go to scratch
// files beyond 32 MiB.
//
//	go test ./server -run '^$' -bench TilesWidestPicture -benchtime 1x
func BenchmarkTilesWidestPicture(b *testing.B) {
	path, size := writeField(b, b.TempDir(), 65535, 300, 64, 0, 9)
	for b.Loop() {
		took, growth, pack := tilePicture(b, path, 0)
		b.ReportMetric(took.Seconds(), "s-to-pyramid")
		b.ReportMetric(float64(growth)/mib, "MiB-peak-heap-growth")
		b.ReportMetric(float64(pack)/1e6, "MB-pack")
		b.ReportMetric(float64(size)/1e6, "MB-picture")
	}
}

// TestTilesMemoryBounded is the benchmark's always-on check, on a 3,200 × 2,400
// picture: its pyramid is built with a heap growth well below the 31 MB its pixels
// take decoded (a band of 256 rows per level, the 1600-pixel preview, a few tiles in
// flight).
// The collector runs often here, so that the heap measured is what is held rather
// than garbage waiting for the next cycle.
func TestTilesMemoryBounded(t *testing.T) {
	path, _ := writeField(t, t.TempDir(), 3200, 2400, 1, 0, 1)
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	_, growth, _ := tilePicture(t, path, 0)
	if growth > 24*mib {
		t.Fatalf("peak heap growth %.1f MiB", float64(growth)/mib)
	}
	t.Logf("peak heap growth %.1f MiB", float64(growth)/mib)
}
