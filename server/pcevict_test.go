package server_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial/demo"
)

// TestEvictedCloudServedAgain: a cloud whose file is gone while its position stays
// (what --pointcloud-max-bytes does to the least recently used) is downloaded again
// as soon as something wants it: the web app's endpoint serves it within the request,
// a signed URL handed out before serves it, and the 3D scene lists it again shortly.
// Nothing is queued for it: its position needs no recomputing. Before, the endpoint
// answered "queued, ask again" for ever with an empty queue.
func TestEvictedCloudServedAgain(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 1, Plants: 12}, demo.ServerOptions{})
	g := ss.g
	bed := ss.ds.Beds[0]
	ss.g.streamBeds(ss.garden, ss.token)
	g.waitClouds()
	plants, positions := expectPositions(t, ss.ds, bed.ProjectUUID)
	i := -1
	for k := range plants {
		if positions[k] != nil {
			i = k
			break
		}
	}
	if i < 0 {
		t.Fatal("the dataset has no plant with a position")
	}
	p := plants[i]
	file := filepath.Join(g.cfg.DataDir, pointcloud.DirName, bed.ProjectUUID, p.Cloud.UUID+".ply")
	kept, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	evict := func() {
		t.Helper()
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
	}
	scenePath := ss.garden + "/beds/" + u64(ss.beds[0]) + "/3d-scene/"
	scene := func() map[string]string {
		var sc sceneAnswer
		if err := json.Unmarshal(g.must(200, "GET", scenePath, ss.token, nil), &sc); err != nil {
			t.Fatal(err)
		}
		urls := map[string]string{}
		for _, sp := range sc.Plants {
			urls[sp.GeometryUUID] = sp.URL
		}
		return urls
	}
	signed := scene()[p.Cloud.UUID]
	if signed == "" {
		t.Fatalf("the scene lacks the kept cloud %s", p.Cloud.UUID)
	}

	// The web app's endpoint: the plant says stored, and the file is there at once.
	evict()
	var listing struct {
		Plants []struct {
			ID         string `json:"id"`
			PointCloud string `json:"pointcloud"`
		}
	}
	if err := json.Unmarshal(g.must(200, "GET", ss.garden+"/beds/"+u64(ss.beds[0])+"/plants", ss.token, nil), &listing); err != nil {
		t.Fatal(err)
	}
	if len(listing.Plants) <= i || listing.Plants[i].PointCloud != "stored" {
		t.Fatalf("plant %d after the eviction: %+v", i, listing.Plants)
	}
	start := time.Now()
	body := g.must(200, "GET", ss.garden+"/beds/"+u64(ss.beds[0])+"/plants/"+p.ID+"/pointcloud", ss.token, nil)
	t.Logf("evicted cloud served again by the plant endpoint after %v", time.Since(start))
	if !bytes.Equal(body, kept) {
		t.Errorf("served %d bytes, the file held %d", len(body), len(kept))
	}

	// A signed URL handed out before the eviction.
	evict()
	start = time.Now()
	res, data := fetch(t, signed)
	if res.StatusCode != 200 || !bytes.HasPrefix(data, []byte("ply\n")) {
		t.Fatalf("signed URL after the eviction: %d %s", res.StatusCode, data)
	}
	t.Logf("evicted cloud served again by its signed URL after %v", time.Since(start))

	// The scene leaves it out while it is not kept, and fetches it.
	evict()
	if _, listed := scene()[p.Cloud.UUID]; listed {
		t.Fatal("the scene lists a cloud that is not kept")
	}
	eventually(t, "the scene to list the evicted cloud again", func() bool { return scene()[p.Cloud.UUID] != "" })

	if jobs, _ := g.srv.Store().CloudJobs(); len(jobs) != 0 {
		t.Errorf("queued %+v: a position that stands needs no job", jobs)
	}
}
