package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/storetest"
)

// discard is a ResponseWriter that keeps nothing of the body, so that a measurement
// sees the server's memory only.
type discard struct {
	h    http.Header
	code int
	n    int64
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(code int)        { d.code = code }
func (d *discard) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }
func (d *discard) Flush()                      {}

// exportHeap builds a garden of 6 beds × 33 plants (positions known, a picture)
// with logs logs, and returns the growth of the peak heap while garden.zip is
// written, and its size.
func exportHeap(tb testing.TB, logs int) (growth uint64, size int64) {
	ds := demo.Generate(demo.Options{Seed: 1, Beds: 6, Plants: 33})
	srv := startDemoSpatial(tb, ds, demo.ServerOptions{})
	dir := tb.TempDir()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	fixture := storetest.LoadLogbook(tb, st, logs)
	const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if err := st.CreateToken(fixture.Author, store.TokenDigest(token), time.Now().Add(time.Hour)); err != nil {
		tb.Fatal(err)
	}
	for i, b := range ds.Beds {
		if _, err := st.CreateBed(fixture.Garden, b.ProjectUUID, "Demo "+u64(uint64(i))); err != nil {
			tb.Fatal(err)
		}
	}
	g := startGardend(tb, server.Config{DataDir: dir, Store: st, Now: func() time.Time { return ds.Now },
		Spatial: spatial.ClientConfig{Addr: srv.Addr()}})
	path := gardenPath(1, fixture.Garden)
	png, corners := demo.GardenPNG(ds, 1600, 1200)
	var coords []map[string]any
	for name, c := range corners {
		coords = append(coords, map[string]any{"name": name, "latitude": c.Lat, "longitude": c.Lon})
	}
	g.must(201, "POST", path+"/image", token, map[string]any{"image": dataURL(png), "coordinates": coords})
	beds, err := st.BedsOfGarden(fixture.Garden)
	if err != nil {
		tb.Fatal(err)
	}
	for _, b := range beds {
		if strings.HasPrefix(b.Name, "Demo") {
			g.must(200, "GET", path+"/beds/"+u64(b.ID)+"/plants", token, nil)
		}
	}
	g.waitClouds()
	// Once, to warm the spatial client's cache and every lazy structure.
	run := func() *discard {
		req := httptest.NewRequestWithContext(context.Background(), "GET", path+"/export/garden.zip", nil)
		req.Header.Set("Authorization", "Token "+token)
		d := &discard{h: http.Header{}}
		g.srv.Handler().ServeHTTP(d, req)
		if d.code != http.StatusOK {
			tb.Fatalf("garden.zip: %d", d.code)
		}
		return d
	}
	run()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	peak := heapPeak(time.Millisecond, stop)
	d := run()
	close(stop)
	if p := <-peak; p > before.HeapInuse {
		growth = p - before.HeapInuse
	}
	return growth, d.n
}

// TestExportZipHeapBounded: garden.zip of a 6 × 33 garden with 10,000 logs and its
// picture streams in at most 32 MiB of heap (issue 17).
func TestExportZipHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 10,000 logs and 198 point clouds")
	}
	growth, size := exportHeap(t, 10_000)
	t.Logf("garden.zip of %d KiB: peak heap growth %.1f MiB", size>>10, float64(growth)/mib)
	if growth > 32*mib {
		t.Fatalf("peak heap growth %.1f MiB, want at most 32", float64(growth)/mib)
	}
}

// BenchmarkExportGardenZip reports the peak heap growth of garden.zip for a 6 × 33
// garden with 10,000 logs (run with -benchtime 1x).
func BenchmarkExportGardenZip(b *testing.B) {
	for b.Loop() {
		growth, size := exportHeap(b, 10_000)
		b.ReportMetric(float64(growth)/mib, "MiB-peak-heap-growth")
		b.ReportMetric(float64(size)/(1<<10), "KiB-zip")
	}
}
