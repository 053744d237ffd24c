package pointcloud

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/cloud"
)

// bedSource serves one bed of project whose plants have the given clouds, in the map
// frame, and a small cloud for each.
type bedSource struct {
	*heldSource
	bed spatial.Bed
}

func newBedSource(clouds ...string) *bedSource {
	src := &bedSource{heldSource: newHeldSource(),
		bed: spatial.Bed{ProjectUUID: project, Origin: spatial.LatLon{Lat: 52.3, Lon: 7.6}}}
	close(src.release)
	src.entered = make(chan string, 64)
	for _, c := range clouds {
		src.bed.Plants = append(src.bed.Plants, spatial.Plant{Name: "p-" + c, ID: "m-" + c, Cloud: &spatial.CloudRef{UUID: c, FrameID: spatial.MapFrame}})
	}
	return src
}

func (s *bedSource) Beds(_ context.Context, projects []string) <-chan spatial.BedResult {
	out := make(chan spatial.BedResult, len(projects))
	for i := range projects {
		out <- spatial.BedResult{Index: i, Bed: s.bed}
	}
	close(out)
	return out
}

func (s *bedSource) downloads(c string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[c]
}

// computed is a pool whose clouds of src's bed have their positions and files, as
// after the first downloads; the pool runs until the test ends.
func computed(t *testing.T, src *bedSource) (*Pool, *Files) {
	t.Helper()
	st := openStore(t)
	files := NewFiles(t.TempDir(), 0, zerolog.Nop())
	p := NewPool(st, src, files, Config{}, st.Now, zerolog.Nop())
	startPool(t, p)
	_, jobs, err := p.Coords(src.bed, false)
	if err != nil {
		t.Fatal(err)
	}
	p.Enqueue(jobs)
	if state := drained(t, p, st); len(state.Positions) != len(src.bed.Plants) {
		t.Fatalf("positions %+v", state.Positions)
	}
	return p, files
}

func evict(t *testing.T, f *Files, c string) {
	t.Helper()
	path, _ := f.Path(project, c)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// TestSyncFetchesEvictedClouds: pointclouds sync fetches a cloud whose file is gone
// while its position stays, and counts it; before, a stored position made it say
// nothing was missing. Kept clouds are left alone.
func TestSyncFetchesEvictedClouds(t *testing.T) {
	src := newBedSource(cloudA, cloudB)
	p, files := computed(t, src)
	evict(t, files, cloudA)
	var last Progress
	p.Sync(context.Background(), []string{project}, func(pr Progress) { last = pr })
	if !last.Final || last.Total != 1 || last.Done != 1 || last.Failed != 0 || last.Bytes == 0 || last.Error != "" {
		t.Fatalf("sync: %+v, want the one evicted cloud fetched", last)
	}
	if !files.Kept(project, cloudA) || src.downloads(cloudA) != 2 || src.downloads(cloudB) != 1 {
		t.Fatalf("kept %v; downloads A %d, B %d", files.Kept(project, cloudA), src.downloads(cloudA), src.downloads(cloudB))
	}
	p.Sync(context.Background(), []string{project}, func(pr Progress) { last = pr })
	if last.Total != 0 {
		t.Fatalf("a second sync: %+v, want nothing missing", last)
	}
}

// TestFetchDecidesByTheFile: a viewer's Fetch downloads an evicted cloud again and
// waits for it; a cloud without a position is queued; one that nothing can place is
// never downloaded.
func TestFetchDecidesByTheFile(t *testing.T) {
	src := newBedSource(cloudA)
	p, files := computed(t, src)
	evict(t, files, cloudA)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Fetch(ctx, src.bed, cloudA); err != nil || !files.Kept(project, cloudA) {
		t.Fatalf("Fetch of an evicted cloud: %v, kept %v", err, files.Kept(project, cloudA))
	}
	if err := p.Fetch(ctx, src.bed, cloudA); err != nil || src.downloads(cloudA) != 2 {
		t.Fatalf("Fetch of a kept cloud: %v, %d downloads", err, src.downloads(cloudA))
	}

	moved := src.bed
	moved.Origin.Lat += 0.001 // the position is stale: its job keeps the file
	if err := p.Fetch(ctx, moved, cloudA); !errors.Is(err, ErrQueued) {
		t.Fatalf("a stale position: %v, want ErrQueued", err)
	}
	noTF := src.bed
	noTF.Plants = []spatial.Plant{{Name: "p", ID: "m", Cloud: &spatial.CloudRef{UUID: cloudB, FrameID: "camera"}}}
	if err := p.Fetch(ctx, noTF, cloudB); !errors.Is(err, ErrNoPosition) {
		t.Fatalf("a cloud nothing can place: %v, want ErrNoPosition", err)
	}
}

// TestOpenView: a view leaves out the points without finite x, y and z, streaming
// the file; a file with nothing to leave out is served as it is (ranges too).
func TestOpenView(t *testing.T) {
	f := NewFiles(t.TempDir(), 0, zerolog.Nop())
	nan := float32(math.NaN())
	for _, tc := range []struct {
		cloud    string
		pc       cloud.PointCloud
		seekable bool
		points   uint32
	}{
		{cloudA, xyzCloud([3]float32{1, 2, 3}, [3]float32{nan, 0, 0}, [3]float32{3, 4, 5}), false, 2},
		{cloudB, xyzCloud([3]float32{1, 2, 3}, [3]float32{3, 4, 5}), true, 2},
	} {
		path, _ := f.Path(project, tc.cloud)
		if _, err := f.write(path, tc.pc); err != nil {
			t.Fatal(err)
		}
		v, err := f.OpenView(project, tc.cloud)
		if err != nil {
			t.Fatal(err)
		}
		if v.Seekable != tc.seekable {
			t.Errorf("%s: seekable %v", tc.cloud, v.Seekable)
		}
		end, err := v.Seek(0, io.SeekEnd)
		if err != nil || end != v.Size {
			t.Fatalf("%s: end %d (%v), size %d", tc.cloud, end, err, v.Size)
		}
		if _, err := v.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(v)
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		if err != nil || int64(len(data)) != v.Size {
			t.Fatalf("%s: %d bytes of %d (%v)", tc.cloud, len(data), v.Size, err)
		}
		pc, err := cloud.ReadPLY(bytes.NewReader(data))
		if err != nil || pc.Width != tc.points {
			t.Fatalf("%s: %d points (%v), want %d", tc.cloud, pc.Width, err, tc.points)
		}
		if mean, ok := f.Centre(project, tc.cloud); !ok || mean != [3]float64{2, 3, 4} {
			t.Errorf("%s: centre %v %v", tc.cloud, mean, ok)
		}
	}
	if _, err := f.OpenView(project, "0b5e8a1c-3333-4333-8333-333333333333"); !errors.Is(err, ErrNotKept) {
		t.Errorf("not kept: %v", err)
	}
	path, _ := f.Path(project, cloudA)
	if err := os.WriteFile(path, []byte("not a cloud"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.OpenView(project, cloudA); !errors.Is(err, cloud.ErrPLY) {
		t.Errorf("a damaged file: %v", err)
	}
}
