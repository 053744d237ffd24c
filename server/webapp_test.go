package server_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

// TestWebAppServing: the page and its versioned assets, with the CSP, cache headers,
// gzip and ETags; assets of another version are 404.
func TestWebAppServing(t *testing.T) {
	h := newHarness(t)
	page := h.do("GET", "/", "", nil).expect(http.StatusOK)
	if ct := page.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("page Content-Type %q", ct)
	}
	csp := page.Header().Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q", csp)
	}
	if cc := page.Header().Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("page Cache-Control %q", cc)
	}
	body := page.Body.String()
	if strings.Contains(body, "{{") || !strings.Contains(body, `<meta name="gardend-registration" content="open">`) {
		t.Fatalf("page not filled in: %s", body)
	}
	// The page names its script by a versioned path; no inline script.
	start := strings.Index(body, `<script type="module" src="`)
	if start < 0 || strings.Count(body, "<script") != 1 {
		t.Fatalf("page scripts: %s", body)
	}
	src := body[start+len(`<script type="module" src="`):]
	src = src[:strings.IndexByte(src, '"')]
	if !strings.HasPrefix(src, "/app/") || !strings.HasSuffix(src, "/js/main.js") {
		t.Fatalf("script src %q", src)
	}
	version := strings.Split(src, "/")[2]

	res := h.do("GET", src, "", nil, "Accept-Encoding", "gzip, br").expect(http.StatusOK)
	if res.Header().Get("Content-Encoding") != "gzip" || !strings.Contains(res.Header().Get("Cache-Control"), "immutable") ||
		res.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("asset headers %v", res.Header())
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(zr)
	if !strings.Contains(string(js), "import") {
		t.Errorf("main.js decompressed to %q…", js[:min(len(js), 80)])
	}
	plain := h.do("GET", src, "", nil, "Accept-Encoding", "gzip;q=0").expect(http.StatusOK)
	if plain.Header().Get("Content-Encoding") != "" || plain.Body.String() != string(js) {
		t.Errorf("gzip;q=0 still compressed (%q)", plain.Header().Get("Content-Encoding"))
	}
	etag := res.Header().Get("ETag")
	h.do("GET", src, "", nil, "If-None-Match", etag).expect(http.StatusNotModified)
	h.do("GET", "/", "", nil, "If-None-Match", page.Header().Get("ETag")).expect(http.StatusNotModified)

	h.do("GET", "/app/"+version+"/vendor/three/LICENSE", "", nil).expect(http.StatusOK)
	for _, p := range []string{"/app/0000000000000000/js/main.js", "/app/" + version + "/js/nothing.js", "/app/" + version + "/../static/index.html"} {
		if res := h.do("GET", p, "", nil); res.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, res.Code)
		}
	}

	closed := newHarness(t, func(c *server.Config) { c.Registration = server.RegistrationClosed })
	if b := closed.do("GET", "/", "", nil).expect(http.StatusOK).Body.String(); !strings.Contains(b, `content="closed"`) {
		t.Errorf("closed registration not on the page")
	}
}

// TestRoleEndpoints: admin, reader, and 404 for what the caller cannot see.
func TestRoleEndpoints(t *testing.T) {
	g := startGardend(t, server.Config{})
	owner, reader, stranger := g.register("owner"), g.register("reader"), g.register("stranger")
	f := g.gardenWithBeds(owner, nil)
	g.must(201, "POST", f.path+"/createPermission", owner, map[string]string{"username": "reader", "permission": "u"})
	role := func(path, token string) string {
		var v struct{ Role string }
		json.Unmarshal(g.must(200, "GET", path+"/role", token, nil), &v)
		return v.Role
	}
	for _, c := range []struct{ path, token, want string }{
		{companyPath(f.company), owner, "admin"},
		{f.path, owner, "admin"},
		{f.path, reader, "reader"},
		{companyPath(f.company), reader, "reader"}, // through the garden permission
	} {
		if got := role(c.path, c.token); got != c.want {
			t.Errorf("%s: %q, want %q", c.path, got, c.want)
		}
	}
	g.must(404, "GET", f.path+"/role", stranger, nil)
	g.must(404, "GET", companyPath(f.company)+"/role", stranger, nil)
	g.must(401, "GET", f.path+"/role", "", nil)
}

// TestSpatialProjects: the server's projects with the garden's beds beside them, for
// garden admins only; 502 when the spatial server is down.
func TestSpatialProjects(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 3, Plants: 3}, demo.ServerOptions{})
	// Only the first two projects are beds of the garden; remove the third.
	g := ss.g
	g.must(200, "DELETE", ss.garden+"/beds/"+u64(ss.beds[2]), ss.token, nil)
	var got struct {
		Projects []struct {
			UUID, Name string
			BedID      uint64 `json:"bed_id"`
		}
		Beds []store.Bed
	}
	json.Unmarshal(g.must(200, "GET", ss.garden+"/spatial-projects", ss.token, nil), &got)
	if len(got.Projects) != 3 || len(got.Beds) != 2 {
		t.Fatalf("got %+v", got)
	}
	for _, p := range got.Projects {
		want := uint64(0)
		for i, b := range ss.ds.Beds[:2] {
			if b.ProjectUUID == p.UUID {
				want = ss.beds[i]
			}
		}
		if p.BedID != want || p.Name == "" {
			t.Errorf("project %+v: bed %d, want %d", p, p.BedID, want)
		}
	}
	reader := g.register("reader")
	g.must(201, "POST", ss.garden+"/createPermission", ss.token, map[string]string{"username": "reader", "permission": "u"})
	g.must(403, "GET", ss.garden+"/spatial-projects", reader, nil)
	g.must(404, "GET", ss.garden+"/spatial-projects", g.register("stranger"), nil)

	ss.demo.SetHook(func(method, _ string) (time.Duration, error) {
		return 0, status.Error(codes.Unavailable, "down for the test")
	})
	code, body := g.call("GET", ss.garden+"/spatial-projects", ss.token, nil)
	if code != 502 || !strings.Contains(string(body), "GetProjects") || strings.Contains(string(body), ss.demo.Addr()) {
		t.Errorf("spatial server down: %d %s", code, body)
	}
}

// TestPlantPointCloud: a plant's kept PLY file with its transform into the map frame;
// 404 (and queued) before the download, 404 for unknown plants and for strangers.
func TestPlantPointCloud(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 1, Plants: 12}, demo.ServerOptions{})
	g := ss.g
	bed := ss.ds.Beds[0]
	plants, positions := expectPositions(t, ss.ds, bed.ProjectUUID)
	with, without := -1, -1
	for i, p := range plants {
		switch {
		case p.Cloud != nil && positions[i] != nil && with < 0:
			with = i
		case p.Cloud == nil && without < 0:
			without = i
		}
	}
	if with < 0 {
		t.Fatal("the dataset has no plant with a placeable cloud")
	}
	p := plants[with]
	url := ss.garden + "/beds/" + u64(ss.beds[0]) + "/plants/" + p.ID + "/pointcloud"

	code, body := g.call("GET", url, ss.token, nil)
	if code != 404 || !strings.Contains(string(body), "not downloaded yet") {
		t.Fatalf("before the download: %d %s", code, body)
	}
	if jobs, _ := g.srv.Store().CloudJobs(); len(jobs) != 1 || jobs[0].Cloud != p.Cloud.UUID {
		t.Errorf("queued %+v, want only the asked-for cloud", jobs)
	}
	g.waitClouds()

	res := g.get(context.Background(), url, ss.token)
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != pointcloud.ContentType {
		t.Fatalf("after the download: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), data)
	}
	kept, err := os.ReadFile(filepath.Join(g.cfg.DataDir, pointcloud.DirName, bed.ProjectUUID, p.Cloud.UUID+".ply"))
	if err != nil || string(kept) != string(data) {
		t.Fatalf("body is not the kept file (%v)", err)
	}
	if !strings.HasPrefix(string(data), "ply\n") || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("body starts %q; Cache-Control %q", data[:min(len(data), 10)], res.Header.Get("Cache-Control"))
	}
	var tr []float64
	for f := range strings.FieldsSeq(res.Header.Get("Gardend-Transform")) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("Gardend-Transform %q: %v", res.Header.Get("Gardend-Transform"), err)
		}
		tr = append(tr, v)
	}
	want := []float64{0, 0, 0, 0, 0, 0, 1}
	if p.Cloud.Transform != nil {
		want = append(p.Cloud.Transform.Translation[:], p.Cloud.Transform.Rotation[:]...)
	}
	if len(tr) != 7 {
		t.Fatalf("Gardend-Transform %q", res.Header.Get("Gardend-Transform"))
	}
	for i := range want {
		if tr[i] != want[i] {
			t.Errorf("transform %v, want %v", tr, want)
			break
		}
	}

	// A range, as a resuming viewer asks.
	req, _ := http.NewRequest("GET", g.base+url, nil)
	req.Header.Set("Authorization", "Token "+ss.token)
	req.Header.Set("Range", "bytes=0-2")
	rr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(rr.Body)
	rr.Body.Close()
	if rr.StatusCode != 206 || string(part) != "ply" {
		t.Errorf("range: %d %q", rr.StatusCode, part)
	}

	g.must(404, "GET", ss.garden+"/beds/"+u64(ss.beds[0])+"/plants/no-such-plant/pointcloud", ss.token, nil)
	if without >= 0 {
		code, body := g.call("GET", ss.garden+"/beds/"+u64(ss.beds[0])+"/plants/"+plants[without].ID+"/pointcloud", ss.token, nil)
		if code != 404 || !strings.Contains(string(body), "has no point cloud") {
			t.Errorf("plant without a cloud: %d %s", code, body)
		}
	}
	g.must(404, "GET", url, g.register("stranger"), nil)
	g.must(401, "GET", url, "", nil)
}

// TestPlantCloudStatus: each plant says where its point cloud stands: downloading
// until it lands, then stored; none without a usable cloud; failed once the
// download gives up.
func TestPlantCloudStatus(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 1, Plants: 12}, demo.ServerOptions{})
	plantsURL := ss.garden + "/beds/" + u64(ss.beds[0]) + "/plants"
	plants, positions := expectPositions(t, ss.ds, ss.ds.Beds[0].ProjectUUID)
	statuses := func() []string {
		var v struct {
			Plants []struct {
				PointCloud  string          `json:"pointcloud"`
				PlantCoords json.RawMessage `json:"plant_coords"`
			}
		}
		json.Unmarshal(ss.g.must(200, "GET", plantsURL, ss.token, nil), &v)
		out := make([]string, len(v.Plants))
		for i, p := range v.Plants {
			out[i] = p.PointCloud
			if (p.PlantCoords != nil) != (p.PointCloud == "stored" && positions[i] != nil) {
				t.Errorf("plant %d: %s with coords %s", i, p.PointCloud, p.PlantCoords)
			}
		}
		return out
	}
	for round, st := range [][]string{statuses(), nil} {
		if round == 1 {
			ss.g.waitClouds()
			st = statuses()
		}
		for i, s := range st {
			want := "none"
			switch {
			case positions[i] != nil && round == 0:
				want = "downloading"
			case positions[i] != nil:
				want = "stored"
			case plants[i].Cloud != nil && round == 1 && s == "stored":
				want = "stored" // a cloud without a usable point
			}
			if s != want {
				t.Errorf("round %d plant %d (%s): %q, want %q", round, i, plants[i].Name, s, want)
			}
		}
	}

	// Downloads that give up: failed.
	fs := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 1, Plants: 4}, demo.ServerOptions{}, func(c *server.Config) {
		c.Clouds.Retry = store.RetryPolicy{MaxAttempts: 1, Backoff: time.Millisecond}
	})
	fs.demo.SetHook(func(method, _ string) (time.Duration, error) {
		if method == mCloud {
			return 0, status.Error(codes.Internal, "broken for the test")
		}
		return 0, nil
	})
	fp := fs.garden + "/beds/" + u64(fs.beds[0]) + "/plants"
	fs.g.must(200, "GET", fp, fs.token, nil)
	fs.g.waitClouds()
	var v struct{ Plants []struct{ PointCloud string } }
	json.Unmarshal(fs.g.must(200, "GET", fp, fs.token, nil), &v)
	_, fpos := expectPositions(t, fs.ds, fs.ds.Beds[0].ProjectUUID)
	for i, p := range v.Plants {
		if fpos[i] != nil && p.PointCloud != "failed" {
			t.Errorf("plant %d after a failed download: %q", i, p.PointCloud)
		}
	}
}

// TestSpatialProjectsForSiteAdminsOnly: with a spatial server shared by tenants
// (--spatial-projects site-admins), a garden admin's list holds only the garden's own
// beds and the server is not asked; a site administrator sees every project.
func TestSpatialProjectsForSiteAdminsOnly(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 3, Plants: 3}, demo.ServerOptions{}, func(c *server.Config) {
		c.SpatialProjects = server.SpatialProjectsSiteAdmins
	})
	g := ss.g
	g.must(200, "DELETE", ss.garden+"/beds/"+u64(ss.beds[2]), ss.token, nil)
	var asked atomic.Int32
	ss.demo.SetHook(func(method, _ string) (time.Duration, error) {
		if strings.HasSuffix(method, "/GetProjects") {
			asked.Add(1)
		}
		return 0, nil
	})
	var got struct {
		Projects []struct {
			UUID, Name string
			BedID      uint64 `json:"bed_id"`
		}
	}
	json.Unmarshal(g.must(200, "GET", ss.garden+"/spatial-projects", ss.token, nil), &got)
	if len(got.Projects) != 2 || asked.Load() != 0 {
		t.Fatalf("garden admin: %+v, the spatial server asked %d times", got.Projects, asked.Load())
	}
	for i, p := range got.Projects {
		if p.UUID != ss.ds.Beds[i].ProjectUUID || p.BedID != ss.beds[i] {
			t.Errorf("project %d: %+v", i, p)
		}
	}

	hash, err := store.NewPasswords(cheapArgon2, 1).Hash(context.Background(), "root-password-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.srv.Store().CreateUser(store.NewUser{Username: "root", FirstName: "S", LastName: "A", PasswordHash: hash, SiteAdmin: true}); err != nil {
		t.Fatal(err)
	}
	var login struct{ Token string }
	json.Unmarshal(g.must(200, "POST", "/login", "", map[string]string{"username": "root", "password": "root-password-1"}), &login)
	json.Unmarshal(g.must(200, "GET", ss.garden+"/spatial-projects", login.Token, nil), &got)
	if len(got.Projects) != 3 || asked.Load() != 1 {
		t.Fatalf("site administrator: %+v, the spatial server asked %d times", got.Projects, asked.Load())
	}
}
