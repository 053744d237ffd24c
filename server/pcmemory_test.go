package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/spatial/demo"
)

// TestSignedPLYConcurrentHeapBounded: 16 GETs at once of one large kept cloud through
// its signed URL (no token needed) keep the heap within a few MiB of where it was,
// whatever the cloud's size: each streams its file. Before, each read the cloud whole
// and wrote it into two more buffers, so 16 GETs of a 60 MiB cloud took the process
// past 1 GiB. The cloud is 6 MiB here (quick under -race); GARDEND_CLOUD_MIB=60 gives
// the figure.
func TestSignedPLYConcurrentHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 16 large clouds; skipped with -short")
	}
	size := int64(6)
	if v := os.Getenv("GARDEND_CLOUD_MIB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			t.Fatalf("GARDEND_CLOUD_MIB=%q: want a number of MiB", v)
		}
		size = n
	}
	const gets = 16
	ss := newSpatialSetup(t, demo.Options{Seed: 11, Beds: 1, Plants: 4}, demo.ServerOptions{}, func(c *server.Config) {
		c.MaxCloudResponses = 4 * gets // the slots are not what is measured here
	})
	ss.g.streamBeds(ss.garden, ss.token)
	ss.g.waitClouds()
	var sc sceneAnswer
	if err := json.Unmarshal(ss.g.must(200, "GET", ss.garden+"/beds/"+u64(ss.beds[0])+"/3d-scene/", ss.token, nil), &sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Plants) == 0 {
		t.Fatal("no cloud in the scene")
	}
	sp := sc.Plants[0]

	// The kept file becomes a large cloud with a quarter of its points NaN.
	file := filepath.Join(ss.g.cfg.DataDir, pointcloud.DirName, ss.ds.Beds[0].ProjectUUID, sp.GeometryUUID+".ply")
	want := writeLargeCloud(t, file, size<<20)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	stop := make(chan struct{})
	peak := heapPeak(time.Millisecond, stop)
	var wg sync.WaitGroup
	errs := make(chan string, gets)
	for range gets {
		wg.Go(func() {
			res, err := http.Get(sp.URL)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer func() { _ = res.Body.Close() }() // read to the end below
			h := sha256.New()
			n, err := io.Copy(h, res.Body)
			if res.StatusCode != 200 || err != nil || [sha256.Size]byte(h.Sum(nil)) != want {
				errs <- res.Status + ", " + strconv.FormatInt(n, 10) + " bytes, " + errText(err)
			}
		})
	}
	wg.Wait()
	close(stop)
	close(errs)
	for e := range errs {
		t.Errorf("GET: %s", e)
	}
	grown := int64(<-peak) - int64(base)
	t.Logf("peak heap %d MiB above the %d MiB before: %d GETs of a %d MiB cloud", grown>>20, base>>20, gets, size)
	if grown > 16<<20 {
		t.Fatalf("the heap grew by %d MiB for %d GETs of a %d MiB cloud; want under 16 MiB whatever the size", grown>>20, gets, size)
	}
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// writeLargeCloud replaces the kept cloud at path (atomically, as the pool writes)
// with a cloud of about size bytes, a quarter of its points NaN, and returns the
// SHA-256 of what a viewer must get: the finite points, as cloud.FinitePoints and
// cloud.WritePLY make them.
func writeLargeCloud(t *testing.T, path string, size int64) [sha256.Size]byte {
	t.Helper()
	const step = 16 // x, y, z float32 and rgb packed in a uint32
	n := int(size / step)
	pc := cloud.PointCloud{Width: uint32(n), Height: 1, PointStep: step, RowStep: uint32(n * step),
		Fields: []cloud.Field{
			{Name: "x", Offset: 0, Datatype: cloud.Float32, Count: 1},
			{Name: "y", Offset: 4, Datatype: cloud.Float32, Count: 1},
			{Name: "z", Offset: 8, Datatype: cloud.Float32, Count: 1},
			{Name: "rgb", Offset: 12, Datatype: cloud.Uint32, Count: 1},
		},
		Data: make([]byte, n*step)}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		p := pc.Data[i*step:]
		for k := range 3 {
			v := float32(r.Float64())
			if k == 2 && i%4 == 3 {
				v = float32(math.NaN())
			}
			binary.LittleEndian.PutUint32(p[4*k:], math.Float32bits(v))
		}
		binary.LittleEndian.PutUint32(p[12:], r.Uint32())
	}
	var b bytes.Buffer
	if err := cloud.WritePLY(&b, pc); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	fin, err := cloud.FinitePoints(pc)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := cloud.WritePLY(&b, fin); err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b.Bytes())
}
