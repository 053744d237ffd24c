package cli_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestBackupMovesBetweenBackends moves an install from a box to a cluster and back:
// a backup of a bbolt data directory restores into PostgreSQL (records and image
// content into the database, the point-cloud cache into the node's --data), a backup
// of the PostgreSQL install taken while it serves restores into a new bbolt data
// directory, and at every step the same users log in with the same passwords and
// tokens, with the same widgets, gardens and image bytes.
func TestBackupMovesBetweenBackends(t *testing.T) {
	box := t.TempDir()
	base, stop := serveUntil(t, box)
	gs := populate(t, base)
	png, err := os.ReadFile("../testdata/images/garden.png")
	if err != nil {
		t.Fatal(err)
	}
	garden := gardenImageThrough(t, base, gs[0].token, png)
	// A log with a photo: its record, its picture and its thumbnail move along.
	photo := logPhotoThrough(t, base, gs[0].token, garden, png)
	stop()
	// A bed and a kept point cloud of its project.
	const project = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
	if _, err := run(t, "", "beds", "add", "--data", box, "--garden", garden[strings.LastIndexByte(garden, '/')+1:], "--uuid", project); err != nil {
		t.Fatal(err)
	}
	ply := filepath.Join("pointclouds", project, "c1.ply")
	writeFile(t, filepath.Join(box, ply), "ply\nformat ascii 1.0\nend_header\n")

	fromBox := filepath.Join(t.TempDir(), "box.tar")
	if _, err := run(t, "", "backup", "--data", box, fromBox); err != nil {
		t.Fatal(err)
	}

	// Into PostgreSQL, with a node's data directory for the cache.
	dsn := pgtest.NewDatabase(t)
	node := t.TempDir()
	out, err := run(t, "", "restore", fromBox, "--store", dsn, "--data", node)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "into PostgreSQL") || strings.Contains(out, "password") {
		t.Errorf("restore output %q", out)
	}
	if _, err := os.Stat(filepath.Join(node, ply)); err != nil {
		t.Errorf("the point-cloud cache did not come along: %v", err)
	}
	// Into a database that holds data: refused without --force, replaced with it.
	if _, err := run(t, "", "restore", fromBox, "--store", dsn); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("restore over data: %v, want a refusal naming --force", err)
	}
	if _, err := run(t, "", "restore", fromBox, "--store", dsn, "--force"); err != nil {
		t.Fatalf("restore --force: %v", err)
	}
	clusterBase := serveOn(t, node, dsn)
	checkGardeners(t, clusterBase, gs)
	checkImage(t, clusterBase, gs[0].token, garden, png)
	checkPhoto(t, clusterBase, gs[0].token, photo)

	// Back from the cluster, taken while it serves.
	fromCluster := filepath.Join(t.TempDir(), "cluster.tar")
	out, err = run(t, "", "backup", "--store", dsn, "--data", node, fromCluster)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "images/ 1 file") || !strings.Contains(out, "photos/ 2 files") {
		t.Errorf("backup output %q: want the image content beside the records", out)
	}
	f, err := os.Open(fromCluster)
	if err != nil {
		t.Fatal(err)
	}
	m, err := backup.Verify(f, backup.ReadOptions{})
	f.Close()
	if err != nil || m.Database != server.RecordsName || !m.RecordsArchive() || m.FormatVersion != 2 {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	box2 := filepath.Join(t.TempDir(), "box2")
	if _, err := run(t, "", "restore", fromCluster, "--data", box2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(box2, server.RecordsName)); err == nil {
		t.Errorf("the records archive stayed in the restored data directory")
	}
	boxBase := serve(t, box2)
	checkGardeners(t, boxBase, gs)
	checkImage(t, boxBase, gs[0].token, garden, png)
	checkPhoto(t, boxBase, gs[0].token, photo)
	if _, err := os.Stat(filepath.Join(box2, ply)); err != nil {
		t.Errorf("the point-cloud file did not come back: %v", err)
	}
}

// storedPhoto is a log photo as first served: its path and the bytes of the
// picture and its thumbnail.
type storedPhoto struct {
	path        string
	full, thumb []byte
}

// logPhotoThrough records a log in the garden with png as its photo, and reads back
// what was stored.
func logPhotoThrough(t *testing.T, base, token, garden string, png []byte) storedPhoto {
	t.Helper()
	var l, p struct{ ID uint64 }
	code, body := call(t, "POST", base+garden+"/logs", token, `{"type":"observation","title":"Roof from above"}`)
	if code != http.StatusCreated || json.Unmarshal(body, &l) != nil {
		t.Fatalf("log: %d %s", code, body)
	}
	req, err := http.NewRequest("POST", fmt.Sprintf("%s%s/logs/%d/photos", base, garden, l.ID), bytes.NewReader(png))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "image/png")
	req.Header.Set("Authorization", "Token "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("photo: %d %v", res.StatusCode, err)
	}
	sp := storedPhoto{path: fmt.Sprintf("%s/logs/%d/photos/%d", garden, l.ID, p.ID)}
	_, sp.full = call(t, "GET", base+sp.path, token, "")
	_, sp.thumb = call(t, "GET", base+sp.path+"?size=thumb", token, "")
	return sp
}

// checkPhoto compares a log photo and its thumbnail with what was first served.
func checkPhoto(t *testing.T, base, token string, p storedPhoto) {
	t.Helper()
	if code, body := call(t, "GET", base+p.path, token, ""); code != http.StatusOK || !bytes.Equal(body, p.full) {
		t.Errorf("photo: %d, %d bytes, want %d", code, len(body), len(p.full))
	}
	if code, body := call(t, "GET", base+p.path+"?size=thumb", token, ""); code != http.StatusOK || !bytes.Equal(body, p.thumb) {
		t.Errorf("thumbnail: %d, %d bytes, want %d", code, len(body), len(p.thumb))
	}
}

// serveOn runs a server on the PostgreSQL database dsn, dir being the node's data
// directory, until the test ends.
func serveOn(t *testing.T, dir, dsn string) string {
	t.Helper()
	return serveConfigOn(t, server.Config{DataDir: dir}, dsn)
}

// gardenWithImage creates a company and garden as token's user and uploads png to it;
// it returns the garden's path.
func gardenImageThrough(t *testing.T, base, token string, png []byte) string {
	t.Helper()
	var c, g struct{ ID uint64 }
	code, body := call(t, "POST", base+"/companies", token, `{"name":"Roofs"}`)
	if code != http.StatusCreated || json.Unmarshal(body, &c) != nil {
		t.Fatalf("company: %d %s", code, body)
	}
	code, body = call(t, "POST", fmt.Sprintf("%s/companies/%d/gardens", base, c.ID), token, `{"name":"Roof 1"}`)
	if code != http.StatusCreated || json.Unmarshal(body, &g) != nil {
		t.Fatalf("garden: %d %s", code, body)
	}
	path := fmt.Sprintf("/companies/%d/gardens/%d", c.ID, g.ID)
	upload := fmt.Sprintf(`{"image":"data:image/png;base64,%s","coordinates":[{"name":"top_left","latitude":52.5,"longitude":13.4},{"name":"top_right","latitude":52.5,"longitude":13.5},{"name":"bottom_left","latitude":52.4,"longitude":13.4}]}`,
		base64.StdEncoding.EncodeToString(png))
	if code, body := call(t, "POST", base+path+"/image", token, upload); code != http.StatusCreated {
		t.Fatalf("upload: %d %s", code, body)
	}
	return path
}

// checkImage compares the garden's image with png.
func checkImage(t *testing.T, base, token, garden string, png []byte) {
	t.Helper()
	code, body := call(t, "GET", base+garden+"/image", token, "")
	var doc struct{ Image string }
	if code != http.StatusOK || json.Unmarshal(body, &doc) != nil {
		t.Fatalf("image: %d %.200s", code, body)
	}
	got, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(doc.Image, "data:image/png;base64,"))
	if err != nil || !bytes.Equal(got, png) {
		t.Errorf("image of %d bytes (%v), want the %d uploaded", len(got), err, len(png))
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
