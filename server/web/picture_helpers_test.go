package web_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/imagestore/pngtest"
)

// Helpers for tests that give gardens other pictures: written row by row to a file
// (pngtest), uploaded as a stream, with the demo garden's corners.

// coordinate is one georeferencing point, as the API spells it.
type coordinate struct {
	Name      string  `json:"name"`
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

// demoCorners are the coordinates of the demo garden's picture.
func demoCorners(t testing.TB, d *demoServer) []coordinate {
	t.Helper()
	var doc struct{ Coordinates []coordinate }
	d.api(t, "GET", d.srv.DemoGardenPath()+"/image", nil, 200, &doc)
	return doc.Coordinates
}

// writePicture writes a w × h RGB PNG whose rows row makes to a file of dir.
func writePicture(t testing.TB, dir, name string, w, h int, row func(y int, px []byte)) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pngtest.WriteRows(f, w, h, false, 6, row); err != nil {
		t.Fatal(err)
	}
	return path
}

// uploadPicture makes the PNG at path the picture of the garden at gardenPath.
func uploadPicture(t testing.TB, d *demoServer, gardenPath, path string, corners []coordinate) {
	t.Helper()
	coords, _ := json.Marshal(corners)
	pr, pw := io.Pipe()
	go func() {
		f, err := os.Open(path)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		defer f.Close()
		io.WriteString(pw, `{"coordinates":`+string(coords)+`,"image":"data:image/png;base64,`)
		enc := base64.NewEncoder(base64.StdEncoding, pw)
		if _, err := io.Copy(enc, f); err != nil {
			pw.CloseWithError(err)
			return
		}
		enc.Close()
		io.WriteString(pw, `"}`)
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", d.base+gardenPath+"/image", pr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Token "+d.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("upload to %s: %d %s", gardenPath, res.StatusCode, body)
	}
}

// waitTiled waits until the garden's picture is tiled. A gardend without tiles
// (…/image/info unknown: the code before them) has nothing to wait for.
func waitTiled(t testing.TB, d *demoServer, gardenPath string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		req, _ := http.NewRequest("GET", d.base+gardenPath+"/image/info", nil)
		req.Header.Set("Authorization", "Token "+d.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			Ready bool
			State string
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusNotFound && strings.Contains(string(body), "no endpoint") {
			return
		}
		json.Unmarshal(body, &info)
		switch {
		case res.StatusCode != http.StatusOK:
			t.Fatalf("info: %d %s", res.StatusCode, body)
		case info.Ready:
			return
		case info.State == "failed" || time.Now().After(deadline):
			t.Fatalf("not tiled: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
