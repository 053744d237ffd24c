package server_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial/demo"
)

// TestCloudQueueResumesAfterRestart: downloads cut short by a shutdown stay queued
// without a counted attempt, and a restarted server works them off.
func TestCloudQueueResumesAfterRestart(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 2, Plants: 12}, demo.ServerOptions{})
	// Downloads hang (until cancelled); everything else answers at once.
	ss.demo.SetHook(func(method, _ string) (time.Duration, error) {
		if method == mCloud {
			return time.Hour, nil
		}
		return 0, nil
	})
	ss.g.streamBeds(ss.garden, ss.token)
	eventually(t, "downloads in progress", func() bool { return ss.demo.Stats().InFlight > 0 })
	ss.g.halt()
	jobs := openStoreJobs(t, ss.g.cfg.DataDir)
	want := 0
	for _, b := range ss.ds.Beds {
		_, positions := expectPositions(t, ss.ds, b.ProjectUUID)
		for _, p := range positions {
			if p != nil {
				want++
			}
		}
	}
	if len(jobs) != want {
		t.Fatalf("%d jobs queued at shutdown, want %d", len(jobs), want)
	}
	for _, j := range jobs {
		if j.Attempts != 0 || j.Failed || j.LastError != "" {
			t.Errorf("an interrupted download counted as an attempt: %+v", j)
		}
	}
	// The demo server notes a cancelled call when its handler returns, which may be
	// a moment after our side has hung up.
	eventually(t, "the demo server to see a download cancelled at shutdown", func() bool { return ss.demo.Stats().Cancelled > 0 })

	ss.demo.SetHook(nil)
	ss.g.start()
	ss.g.waitClouds()
	ss.checkBedLines(t, ss.g.streamBeds(ss.garden, ss.token), true)
}

// openStoreJobs reads the queue of a stopped server's data directory.
func openStoreJobs(t *testing.T, dir string) []jobView {
	t.Helper()
	g := startGardend(t, server.Config{DataDir: dir})
	jobs, err := g.srv.Store().CloudJobs()
	if err != nil {
		t.Fatal(err)
	}
	g.halt()
	out := make([]jobView, len(jobs))
	for i, j := range jobs {
		out[i] = jobView{Attempts: j.Attempts, Failed: j.Failed, LastError: j.LastError}
	}
	return out
}

type jobView struct {
	Attempts  int
	Failed    bool
	LastError string
}

// TestStalePositionRecomputedFromPLY: when the server reports another transform for a
// frame, positions computed with the old one are left out until recomputed, and the
// recomputation reads the kept PLY files instead of downloading again.
func TestStalePositionRecomputedFromPLY(t *testing.T) {
	opts := demo.Options{Seed: 3, Beds: 1, Plants: 12}
	ss := newSpatialSetup(t, opts, demo.ServerOptions{})
	ss.g.streamBeds(ss.garden, ss.token)
	ss.g.waitClouds()
	before := ss.g.streamBeds(ss.garden, ss.token)[0].PlantCoords

	// The same garden, but one frame recalibrated: a metre further east.
	ds2 := demo.Generate(opts)
	bed := &ds2.Beds[0]
	moved := ""
	for _, g := range bed.Geometries {
		if _, ok := bed.Transforms[g.FrameID]; ok && g.Type == demo.TypePointCloud {
			moved = g.FrameID
			break
		}
	}
	tf := bed.Transforms[moved]
	tf.Translation[0]++
	bed.Transforms[moved] = tf
	demo2 := startDemoSpatial(t, ds2, demo.ServerOptions{})
	ss.g.halt()
	ss.g.cfg.Spatial.Addr = demo2.Addr()
	ss.g.start()

	plants, want := expectPositions(t, ds2, bed.ProjectUUID)
	var unchanged []latLon
	stale := 0
	for i, p := range plants {
		switch {
		case want[i] == nil:
		case p.Cloud.FrameID == moved:
			stale++
		default:
			unchanged = append(unchanged, *want[i])
		}
	}
	if stale == 0 {
		t.Fatal("no plant in the recalibrated frame")
	}
	got := ss.g.streamBeds(ss.garden, ss.token)[0].PlantCoords
	checkCoords(t, "with stale positions left out", got, unchanged)

	ss.g.waitClouds()
	ss.ds = ds2
	ss.checkBedLines(t, ss.g.streamBeds(ss.garden, ss.token), true)
	if n := demo2.Stats().Calls[mCloud]; n != 0 {
		t.Errorf("%d clouds downloaded again; the kept PLY files suffice", n)
	}
	if len(before) != len(got)+stale {
		t.Errorf("%d positions before, %d after", len(before), len(got)+stale)
	}
}

// TestDeleteRemovesCloudData: deleting beds, gardens or companies removes the
// positions, queue items and PLY files of projects no bed refers to any more, and
// keeps those of a project another garden still uses.
func TestDeleteRemovesCloudData(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 2, Plants: 6}, demo.ServerOptions{})
	uuids := ss.ds.ProjectUUIDs()
	// A second company's garden shares project 0.
	other := ss.g.gardenWithBeds(ss.token, uuids[:1])
	ss.g.streamBeds(ss.garden, ss.token)
	ss.g.waitClouds()
	cloudDir := func(project string) string {
		return filepath.Join(ss.g.cfg.DataDir, pointcloud.DirName, project)
	}
	positions := func(project string) int {
		st, err := ss.g.srv.Store().CloudState(project)
		if err != nil {
			t.Fatal(err)
		}
		return len(st.Positions) + len(st.Jobs)
	}
	for _, u := range uuids {
		if _, err := os.Stat(cloudDir(u)); err != nil || positions(u) == 0 {
			t.Fatalf("project %s: nothing kept (%v)", u, err)
		}
	}
	gone := func(project string) bool {
		_, err := os.Stat(cloudDir(project))
		return errors.Is(err, fs.ErrNotExist) && positions(project) == 0
	}

	ss.g.must(200, "DELETE", ss.garden+"/beds/"+u64(ss.beds[0]), ss.token, nil)
	if gone(uuids[0]) {
		t.Fatal("project 0 lost its clouds while another garden uses it")
	}
	ss.g.must(200, "DELETE", ss.garden, ss.token, nil)
	if !gone(uuids[1]) {
		t.Fatal("project 1's clouds outlived its garden")
	}
	ss.g.must(200, "DELETE", companyPath(other.company), ss.token, nil)
	if !gone(uuids[0]) {
		t.Fatal("project 0's clouds outlived its company")
	}
}

// TestBedsAccess: who may read beds and plants, and the answers without a spatial
// server or without beds.
func TestBedsAccess(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 1, Plants: 4}, demo.ServerOptions{})
	g := ss.g
	reader, stranger := g.register("reader"), g.register("stranger")
	g.must(201, "POST", ss.garden+"/createPermission", ss.token, map[string]string{"username": "reader", "permission": "u"})
	if lines := g.streamBeds(ss.garden, reader); len(lines) != 1 || lines[0].Error != "" {
		t.Fatalf("reader: %+v", lines)
	}
	g.must(200, "GET", ss.garden+"/beds/"+u64(ss.beds[0])+"/plants", reader, nil)
	g.must(404, "GET", ss.garden+"/beds", stranger, nil)
	g.must(404, "GET", ss.garden+"/beds/"+u64(ss.beds[0])+"/plants", stranger, nil)
	g.must(401, "GET", ss.garden+"/beds", "", nil)

	// A bed of another company's garden, addressed under this garden: 404. (Its
	// project is one of its own: the gardener's are not "other"'s to register.)
	otherToken := g.register("other")
	other := g.gardenWithBeds(otherToken, []string{madeUpUUID(0)})
	g.must(404, "GET", ss.garden+"/beds/"+u64(other.beds[0])+"/plants", ss.token, nil)
	g.must(404, "GET", other.path+"/beds", ss.token, nil)
	g.must(404, "GET", ss.garden+"/beds/999/plants", ss.token, nil)

	// A garden without beds: 200 and an empty body.
	var empty struct{ ID uint64 }
	json.Unmarshal(g.must(201, "POST", companyPath(ss.company)+"/gardens", ss.token, map[string]string{"name": "bare"}), &empty)
	res := g.get(t.Context(), gardenPath(ss.company, empty.ID)+"/beds", ss.token)
	body := make([]byte, 1)
	n, _ := res.Body.Read(body)
	res.Body.Close()
	if res.StatusCode != 200 || n != 0 || res.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("garden without beds: %d, %d bytes, %q", res.StatusCode, n, res.Header.Get("Content-Type"))
	}

	// No spatial server configured: 503 for readers, still 404 for strangers.
	bare := startGardend(t, server.Config{})
	tok := bare.register("alone")
	f := bare.gardenWithBeds(tok, ss.ds.ProjectUUIDs())
	nobody := bare.register("nobody")
	for _, p := range []string{f.path + "/beds", f.path + "/beds/" + u64(f.beds[0]) + "/plants"} {
		code, body := bare.call("GET", p, tok, nil)
		var prob struct{ Detail string }
		json.Unmarshal(body, &prob)
		if code != 503 || !strings.HasPrefix(prob.Detail, "no spatial data server configured") {
			t.Errorf("%s without a spatial server: %d %s", p, code, body)
		}
		bare.must(404, "GET", p, nobody, nil)
	}
	if _, ok := bare.srv.SpatialStats(); ok {
		t.Error("a spatial client without --spatial")
	}
}

// TestDemoSeedsGardenWithBeds: --demo serves real beds from its own spatial server,
// and seeding again on restart adds nothing.
func TestDemoSeedsGardenWithBeds(t *testing.T) {
	g := startGardend(t, server.Config{Demo: true})
	seen := ""
	for round := range 2 {
		var login struct{ Token string }
		json.Unmarshal(g.must(200, "POST", "/login", "", map[string]string{"username": server.DemoUsername, "password": server.DemoPassword}), &login)
		var gardens []struct {
			ID        uint64
			Name      string
			ImagePath *string `json:"image_path"`
			Company   uint64
		}
		json.Unmarshal(g.must(200, "GET", "/gardens", login.Token, nil), &gardens)
		if len(gardens) != 1 || gardens[0].Name != server.DemoGardenName || gardens[0].ImagePath == nil {
			t.Fatalf("round %d: gardens %+v", round, gardens)
		}
		path := gardenPath(gardens[0].Company, gardens[0].ID)
		if g.srv.DemoGardenPath() != path {
			t.Errorf("DemoGardenPath %q, want %q", g.srv.DemoGardenPath(), path)
		}
		if round == 1 && *gardens[0].ImagePath != seen {
			t.Errorf("the image was replaced on restart: %s, then %s", seen, *gardens[0].ImagePath)
		}
		seen = *gardens[0].ImagePath
		g.must(200, "GET", path+"/image", login.Token, nil)
		lines := g.streamBeds(path, login.Token)
		if len(lines) != 6 {
			t.Fatalf("round %d: %d beds", round, len(lines))
		}
		for _, l := range lines {
			if l.Error != "" || l.Plant == "" {
				t.Errorf("demo bed %+v", l)
			}
		}
		g.restart()
	}
	var companies []struct{ Name string }
	var login struct{ Token string }
	json.Unmarshal(g.must(200, "POST", "/login", "", map[string]string{"username": server.DemoUsername, "password": server.DemoPassword}), &login)
	json.Unmarshal(g.must(200, "GET", "/companies", login.Token, nil), &companies)
	if len(companies) != 1 || companies[0].Name != server.DemoCompanyName {
		t.Errorf("companies %+v", companies)
	}
}

// TestPlantsURL: the plants URL is absolute, from the request's Host, and from
// X-Forwarded-Proto/Host only when the proxy is trusted.
func TestPlantsURL(t *testing.T) {
	for _, trust := range []bool{false, true} {
		ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 1, Plants: 2}, demo.ServerOptions{},
			func(cfg *server.Config) { cfg.TrustProxy = trust })
		req, _ := http.NewRequest("GET", ss.g.base+ss.garden+"/beds", nil)
		req.Header.Set("Authorization", "Token "+ss.token)
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("X-Forwarded-Host", "garden.example, inner.proxy")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		lines := readBedLines(t, res.Body)
		res.Body.Close()
		want := ss.plantsURL(0)
		if trust {
			want = "https://garden.example" + ss.garden + "/beds/" + u64(ss.beds[0]) + "/plants"
		}
		if len(lines) != 1 || lines[0].Plants != want {
			t.Errorf("trust proxy %v: plants %q, want %q", trust, lines[0].Plants, want)
		}
	}
}
