package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

type sceneAnswer struct {
	Plants []struct {
		GeometryUUID        string            `json:"geometryUUID"`
		MeasurementUUID     string            `json:"measurementUUID"`
		URL                 string            `json:"url"`
		Name                string            `json:"name"`
		LocationDescription uint64            `json:"locationDescription"`
		Type                string            `json:"type"`
		Position            map[string]string `json:"position"`
		Health              []struct {
			Type     string `json:"type"`
			Loglevel int64  `json:"loglevel"`
			Shortcut string `json:"shortcut"`
		} `json:"health"`
		Yield    any    `json:"yield"`
		Status   string `json:"status"`
		Harvest  string `json:"harvest"`
		Progress string `json:"progress"`
	} `json:"plants"`
	Global struct {
		Position map[string]string `json:"position"`
	} `json:"global"`
}

func position(t *testing.T, p map[string]string) [3]float64 {
	t.Helper()
	var v [3]float64
	for k, name := range []string{"x", "y", "z"} {
		f, err := strconv.ParseFloat(p[name], 64)
		if err != nil {
			t.Fatalf("position %v: %v", p, err)
		}
		v[k] = f
	}
	return v
}

func near(a, b [3]float64) bool {
	for k := range a {
		if math.Abs(a[k]-b[k]) > 1e-9*max(1, math.Abs(b[k])) {
			return false
		}
	}
	return true
}

// fetch GETs an absolute URL without any token.
func fetch(t *testing.T, u string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, body
}

// TestSceneAndSignedPLY: the 3D scene lists every plant whose cloud is kept, with the
// values the original client shows and a signed URL that fetches the cloud as PLY
// without a token, from any origin, with NaN points left out. The URL stops working
// when it expires or when any part of it is changed, and survives a restart (the key
// is kept in the data directory, and left out of backups).
func TestSceneAndSignedPLY(t *testing.T) {
	var offset atomic.Int64 // added to the dataset's instant: moves the server's clock
	var dataDir string
	ss := newSpatialSetup(t, demo.Options{Seed: 11, Beds: 2, Plants: 12}, demo.ServerOptions{}, func(c *server.Config) {
		now := c.Now
		c.Now = func() time.Time { return now().Add(time.Duration(offset.Load())) }
		dataDir = t.TempDir()
		c.DataDir = dataDir
	})
	scenePath := ss.garden + "/beds/" + u64(ss.beds[0]) + "/3d-scene/"

	// Nothing is kept before the downloads: an empty scene centred on the origin, and
	// the clouds queued.
	var sc sceneAnswer
	json.Unmarshal(ss.g.must(200, "GET", scenePath, ss.token, nil), &sc)
	if len(sc.Plants) != 0 || position(t, sc.Global.Position) != [3]float64{} {
		t.Fatalf("scene before downloads: %+v", sc)
	}
	ss.g.waitClouds()

	// GET and POST (the client POSTs {}) answer the same.
	var viaPost sceneAnswer
	json.Unmarshal(ss.g.must(200, "POST", scenePath, ss.token, map[string]any{}), &viaPost)
	json.Unmarshal(ss.g.must(200, "GET", scenePath, ss.token, nil), &sc)
	if len(sc.Plants) == 0 || len(viaPost.Plants) != len(sc.Plants) {
		t.Fatalf("GET has %d plants, POST %d", len(sc.Plants), len(viaPost.Plants))
	}

	bed := ss.ds.Bed(ss.ds.Beds[0].ProjectUUID)
	want, _ := ss.ds.WantBed(bed.ProjectUUID)
	byName := map[string]spatial.Plant{}
	kept := 0
	for _, p := range want.Plants {
		byName[p.Name] = p
		if p.Cloud != nil {
			if _, err := os.Stat(filepath.Join(dataDir, pointcloud.DirName, bed.ProjectUUID, p.Cloud.UUID+".ply")); err == nil {
				kept++
			}
		}
	}
	if len(sc.Plants) != kept {
		t.Errorf("%d plants in the scene, %d clouds kept", len(sc.Plants), kept)
	}
	var sum [3]float64
	for i, sp := range sc.Plants {
		p, ok := byName[sp.Name]
		if !ok || p.Cloud == nil || sp.GeometryUUID != p.Cloud.UUID || sp.MeasurementUUID != p.ID {
			t.Fatalf("scene plant %d: %+v", i, sp)
		}
		if i > 0 && sc.Plants[i-1].Name >= sp.Name {
			t.Errorf("plants not in name order: %q before %q", sc.Plants[i-1].Name, sp.Name)
		}
		if sp.LocationDescription != ss.beds[0] || sp.Type != p.Species || sp.Status != p.Status {
			t.Errorf("%s: location %d type %q status %q", sp.Name, sp.LocationDescription, sp.Type, sp.Status)
		}
		src := bed.Clouds[p.Cloud.UUID].PointCloud
		mean, _, err := cloud.MeanXYZ(src)
		if err != nil {
			t.Fatal(err)
		}
		got := position(t, sp.Position)
		if !near(got, mean) {
			t.Errorf("%s: position %v, want %v", sp.Name, got, mean)
		}
		for k := range sum {
			sum[k] += got[k] / float64(len(sc.Plants))
		}
		switch {
		case p.Yield == nil && sp.Yield != "":
			t.Errorf("%s: yield %v, want \"\"", sp.Name, sp.Yield)
		case p.Yield != nil && sp.Yield != *p.Yield:
			t.Errorf("%s: yield %v, want %v", sp.Name, sp.Yield, *p.Yield)
		}
		wantHarvest := ""
		if d, ok := spatial.RemainingToHarvest(p, ss.ds.Now); ok {
			wantHarvest = strconv.Itoa(int(d/(7*24*time.Hour))) + " Weeks"
		}
		if sp.Harvest != wantHarvest {
			t.Errorf("%s: harvest %q, want %q", sp.Name, sp.Harvest, wantHarvest)
		}
		if (p.GrowthState == nil) != (sp.Progress == "") || p.GrowthState != nil && sp.Progress != strconv.FormatFloat(*p.GrowthState, 'f', -1, 64) {
			t.Errorf("%s: progress %q, growth state %v", sp.Name, sp.Progress, ptrText(p.GrowthState))
		}
		for _, h := range sp.Health {
			if h.Shortcut != h.Type[:1] {
				t.Errorf("%s: health %+v", sp.Name, h)
			}
		}

		// The cloud through its signed URL, without a token, from another origin.
		res, body := fetch(t, sp.URL, "Origin", "http://old-client.example")
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != pointcloud.ContentType || res.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("%s: %d %q %q: %s", sp.URL, res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Access-Control-Allow-Origin"), body)
		}
		pc, err := cloud.ReadPLY(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", sp.Name, err)
		}
		fin, _ := cloud.FinitePoints(src)
		if pc.Width*pc.Height != fin.Width*fin.Height {
			t.Errorf("%s: %d points served, %d finite in the source", sp.Name, pc.Width*pc.Height, fin.Width*fin.Height)
		}
		if m, _, err := cloud.MeanXYZ(pc); err != nil || !near(m, mean) {
			t.Errorf("%s: served cloud's mean %v (%v), want %v", sp.Name, m, err, mean)
		}
	}
	if !near(position(t, sc.Global.Position), sum) {
		t.Errorf("global position %v, want %v", sc.Global.Position, sum)
	}

	// Changed URLs are refused with what to do; so are unsigned ones.
	good := sc.Plants[0].URL
	u, _ := url.Parse(good)
	q := u.Query()
	sig, exp := q.Get("signature"), q.Get("expires")
	flip := "A"
	if sig[0] == 'A' {
		flip = "B"
	}
	otherCloud := sc.Plants[len(sc.Plants)-1].GeometryUUID
	for _, tc := range []struct{ name, url, detail string }{
		{"signature", strings.Replace(good, "signature="+sig, "signature="+flip+sig[1:], 1), "does not match"},
		{"expiry", strings.Replace(good, "expires="+exp, "expires="+exp+"0", 1), "does not match"},
		{"path", strings.Replace(good, sc.Plants[0].GeometryUUID, otherCloud, 1), "does not match"},
		{"unsigned", strings.Split(good, "?")[0], "expires and signature"},
		{"garbage", strings.Replace(good, "signature="+sig, "signature=!!!", 1), "does not match"},
	} {
		if tc.name == "path" && otherCloud == sc.Plants[0].GeometryUUID {
			continue
		}
		res, body := fetch(t, tc.url)
		if res.StatusCode != 403 || !strings.Contains(string(body), tc.detail) || res.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s changed: %d %s", tc.name, res.StatusCode, body)
		}
	}

	// The key survives a restart: the URL still works.
	keyPath := filepath.Join(dataDir, server.SigningKeyFileName)
	st, err := os.Stat(keyPath)
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Fatalf("key file: %v %v", st, err)
	}
	ss.g.restart()
	good = strings.Replace(good, u.Host, strings.TrimPrefix(ss.g.base, "http://"), 1)
	if res, body := fetch(t, good); res.StatusCode != 200 {
		t.Fatalf("after a restart: %d %s", res.StatusCode, body)
	}

	// Backups leave the key out.
	hash, _ := store.NewPasswords(cheapArgon2, 1).Hash(context.Background(), "root-password-1")
	if _, err := ss.g.srv.Store().CreateUser(store.NewUser{Username: "root", FirstName: "R", LastName: "R", PasswordHash: hash, SiteAdmin: true}); err != nil {
		t.Fatal(err)
	}
	var login struct{ Token string }
	json.Unmarshal(ss.g.must(200, "POST", "/login", "", map[string]string{"username": "root", "password": "root-password-1"}), &login)
	archive := ss.g.must(200, "GET", "/admin/backup", login.Token, nil)
	m, err := backup.Verify(bytes.NewReader(archive), backup.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Entries {
		if strings.Contains(e.Path, server.SigningKeyFileName) {
			t.Errorf("the backup holds %s", e.Path)
		}
	}
	if len(m.Entries) < 2 {
		t.Errorf("backup entries %v: want the database and the point clouds", m.Entries)
	}

	// Ten minutes on, the URL has expired.
	offset.Store(int64(server.DefaultSignedURLTTL))
	if res, body := fetch(t, good); res.StatusCode != 403 || !strings.Contains(string(body), "expired") {
		t.Errorf("expired URL: %d %s", res.StatusCode, body)
	}
}

// TestSceneAccess: the scene needs a token and read access to the garden, and exactly
// its path: without the trailing slash there is nothing (no redirect).
func TestSceneAccess(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 1, Beds: 1, Plants: 3}, demo.ServerOptions{})
	path := ss.garden + "/beds/" + u64(ss.beds[0]) + "/3d-scene/"
	stranger := ss.g.register("stranger")
	for _, tc := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", path, "", 401},
		{"POST", path, "", 401},
		{"GET", path, stranger, 404},
		{"GET", strings.TrimSuffix(path, "/"), ss.token, 404},
		{"GET", ss.garden + "/beds/999/3d-scene/", ss.token, 404},
		{"PUT", path, ss.token, 405},
		{"GET", path, ss.token, 200},
	} {
		if code, body := ss.g.call(tc.method, tc.path, tc.token, nil); code != tc.want {
			t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.path, code, tc.want, body)
		}
	}
}

// TestSigningKeyDamaged: a key file of the wrong size stops the server with advice
// rather than being replaced (URLs signed with it would silently stop working).
func TestSigningKeyDamaged(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, server.SigningKeyFileName), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := newServer(t, server.Config{DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("New with a damaged key: %v", err)
	}
}
