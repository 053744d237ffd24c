package server_test

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// The whole memory budget of issue 8 at once: eight concurrent image uploads and a
// flood of correct logins (production argon2 cost, two hashes at once, serve's memory
// limit) keep the peak heap under 300 MiB. Before, one 64 MiB upload alone took the
// process to 257 MiB and four hashes at once 256 MiB more. Uploads are 16 MiB each
// here (quick under -race); GARDEND_UPLOAD_MIB=64 gives the figure, as
// BenchmarkUploadsDuringLoginFlood does.
func TestUploadsDuringLoginFloodHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes 46 MiB at a time and uploads 128 MiB; skipped with -short")
	}
	size := int64(16)
	if v := os.Getenv("GARDEND_UPLOAD_MIB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			t.Fatalf("GARDEND_UPLOAD_MIB=%q: want a number of MiB", v)
		}
		size = n
	}
	peak := uploadsDuringLoginFlood(t, size*mib)
	t.Logf("peak heap %d MiB: 8 uploads of %d MiB during 16 logins", peak/mib, size)
	if peak >= 300*mib {
		t.Fatalf("peak heap %d MiB, want under 300 MiB", peak/mib)
	}
}

// BenchmarkUploadsDuringLoginFlood reports the peak heap of eight concurrent 64 MiB
// uploads during a login flood (run with -benchtime 1x).
func BenchmarkUploadsDuringLoginFlood(b *testing.B) {
	for b.Loop() {
		b.ReportMetric(float64(uploadsDuringLoginFlood(b, 64*mib))/mib, "MiB-peak-heap")
	}
}

// uploadsDuringLoginFlood runs, on a server set up as gardend serve sets it up, 8
// uploads of size bytes to gardens of their own while 8 clients log in 16 times, and
// returns the peak heap in use.
func uploadsDuringLoginFlood(tb testing.TB, size int64) uint64 {
	const hashing, uploads, logins = 2, 8, 16
	f := newFlood(tb, func(c *server.Config) {
		c.MaxHashing = hashing
		c.MaxUploads = uploads
		c.MaxImageBytes = 2*size + 4096
		c.HashingProcs = true
	})
	defer server.SetMemoryLimit(server.DefaultMemoryLimit(store.DefaultArgon2, hashing))()
	var companies []struct{ ID uint64 }
	if code := f.send("GET", "/companies", f.token, nil, &companies); code != http.StatusOK || len(companies) != 1 {
		tb.Fatalf("companies: %d %v", code, companies)
	}
	paths := make([]string, uploads)
	for i := range paths {
		var g struct{ ID uint64 }
		if code := f.send("POST", fmt.Sprintf("/companies/%d/gardens", companies[0].ID), f.token,
			map[string]string{"name": "g" + strconv.Itoa(i)}, &g); code != http.StatusCreated {
			tb.Fatalf("create garden: %d", code)
		}
		paths[i] = f.base + gardenPath(companies[0].ID, g.ID) + "/image"
	}

	runtime.GC()
	stop := make(chan struct{})
	peak := heapPeak(2*time.Millisecond, stop)
	done := make(chan int64)
	go func() {
		_, failed := f.loginFlood(8, logins)
		done <- failed
	}()
	uploadAll(tb, f.token, paths, size)
	failed := <-done
	close(stop)
	if failed > 0 {
		tb.Errorf("%d logins failed", failed)
	}
	return <-peak
}
