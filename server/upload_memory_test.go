package server_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server"
)

// uploadBody streams {"coordinates": …, "image": "<data URL>"} for a PNG of size bytes
// (the fixture's header, then incompressible filler) without holding it: the test's
// own memory stays out of the figures.
func uploadBody(tb testing.TB, size int64, seed uint64) (io.ReadCloser, int64) {
	head := fixture(tb, "garden.png")
	coords, _ := json.Marshal(cornersJSON)
	prefix := `{"coordinates":` + string(coords) + `,"image":"` + imagestore.DataURLPrefix
	const suffix = `"}`
	length := int64(len(prefix)) + int64(base64.StdEncoding.EncodedLen(int(size))) + int64(len(suffix))
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, prefix)
		enc := base64.NewEncoder(base64.StdEncoding, pw)
		enc.Write(head)
		var s [32]byte
		s[0] = byte(seed)
		io.CopyN(enc, rand.NewChaCha8(s), size-int64(len(head)))
		enc.Close()
		io.WriteString(pw, suffix)
		pw.Close()
	}()
	return pr, length
}

// concurrentUploads runs n uploads of size bytes at once against a real listener, each
// to its own garden, and returns the growth of the peak heap over the heap before.
func concurrentUploads(tb testing.TB, n int, size int64) (growth uint64, elapsed time.Duration) {
	srv, base, _ := runServer(tb, server.Config{DataDir: tb.TempDir(), MaxUploads: n, MaxImageBytes: 2*size + 4096})
	ts := &testServer{tb: tb, srv: srv}
	owner := ts.register("owner")
	c := ts.createCompany(owner, "c")
	paths := make([]string, n)
	for i := range n {
		paths[i] = base + gardenPath(c.ID, ts.createGarden(owner, c.ID, "g"+strconv.Itoa(i)).ID) + "/image"
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	peak := heapPeak(2*time.Millisecond, stop)
	start := time.Now()
	uploadAll(tb, owner, paths, size)
	elapsed = time.Since(start)
	close(stop)
	if p := <-peak; p > before.HeapInuse {
		growth = p - before.HeapInuse
	}
	return growth, elapsed
}

// uploadAll uploads an image of size bytes to each of paths at once, as token, and
// fails tb unless every upload is answered 201.
func uploadAll(tb testing.TB, token string, paths []string, size int64) {
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: len(paths)}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range paths {
		wg.Go(func() {
			body, length := uploadBody(tb, size, uint64(i))
			req, _ := http.NewRequest("POST", paths[i], body)
			req.ContentLength = length
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Token "+token)
			res, err := client.Do(req)
			if err != nil {
				tb.Errorf("upload %d: %v", i, err)
				failed.Add(1)
				return
			}
			msg, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusCreated {
				tb.Errorf("upload %d: %s %s", i, res.Status, msg)
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		tb.FailNow()
	}
}

// TestConcurrentUploadsBoundedHeap: uploads stream to disk, so eight at once grow the
// heap by a few buffers each, not by their size (before the fix, each held its body,
// the decoded string and the image: 8 × 2 MiB took the heap up by 58 MiB, now by 2).
// GARDEND_UPLOAD_MIB sets the size (default 2, quick under -race; 64 is the figure of
// issue 8, see BenchmarkConcurrentUploads).
func TestConcurrentUploadsBoundedHeap(t *testing.T) {
	mib := int64(2)
	if v := os.Getenv("GARDEND_UPLOAD_MIB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			t.Fatalf("GARDEND_UPLOAD_MIB=%q: want a number of MiB", v)
		}
		mib = n
	}
	const n = 8
	const bound = 16 << 20
	growth, elapsed := concurrentUploads(t, n, mib<<20)
	t.Logf("%d concurrent uploads of %d MiB in %v: peak heap +%.1f MiB", n, mib, elapsed.Round(time.Millisecond), float64(growth)/(1<<20))
	if growth > bound {
		t.Fatalf("peak heap grew by %.1f MiB for %d uploads of %d MiB; want under %d MiB", float64(growth)/(1<<20), n, mib, bound>>20)
	}
}

// BenchmarkConcurrentUploads reports the peak heap growth of 8 concurrent 64 MiB
// uploads (run with -benchtime 1x).
func BenchmarkConcurrentUploads(b *testing.B) {
	for b.Loop() {
		growth, elapsed := concurrentUploads(b, 8, 64<<20)
		b.ReportMetric(float64(growth)/(1<<20), "MiB-peak-heap")
		b.ReportMetric(elapsed.Seconds(), "s-wall")
	}
}
