package server_test

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// exportFarm is a running server on the demo spatial server with a garden of its
// beds, its picture, and logs of beds and plants.
type exportFarm struct {
	ds     *demo.Dataset
	srv    *demo.Server
	g      *gardend
	token  string
	farm   farm
	placed int // plants with a known position
}

func newExportFarm(t *testing.T, b backend, beds, plants int) *exportFarm {
	t.Helper()
	ds := demo.Generate(demo.Options{Seed: 9, Beds: beds, Plants: plants})
	x := &exportFarm{ds: ds, srv: startDemoSpatial(t, ds, demo.ServerOptions{})}
	x.g = startGardendOn(t, b, server.Config{Now: func() time.Time { return ds.Now },
		Spatial: spatial.ClientConfig{Addr: x.srv.Addr(), CacheTTL: spatial.CacheDisabled}})
	x.token = x.g.register("gardener")
	x.farm = x.g.gardenWithBeds(x.token, ds.ProjectUUIDs())
	png, corners := demo.GardenPNG(ds, 120, 90)
	var coords []map[string]any
	for name, c := range corners {
		coords = append(coords, map[string]any{"name": name, "latitude": c.Lat, "longitude": c.Lon})
	}
	x.g.must(201, "POST", x.farm.path+"/image", x.token, map[string]any{"image": dataURL(png), "coordinates": coords})
	// The plants answer queues the clouds; once kept, positions are known.
	for _, bed := range x.farm.beds {
		x.g.must(200, "GET", x.farm.path+"/beds/"+u64(bed)+"/plants", x.token, nil)
	}
	x.g.waitClouds()
	for i := range ds.Beds {
		_, positions := expectPositions(t, ds, ds.Beds[i].ProjectUUID)
		for _, p := range positions {
			if p != nil {
				x.placed++
			}
		}
	}
	return x
}

func (x *exportFarm) get(t *testing.T, file, token string) ([]byte, string, string) {
	t.Helper()
	res := x.g.get(t.Context(), x.farm.path+"/export/"+file, token)
	defer res.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		t.Fatalf("%s: %d %s", file, res.StatusCode, buf.Bytes())
	}
	return buf.Bytes(), res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition")
}

// TestExports: every export through the API, as a reader of the garden gets it.
func TestExports(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		x := newExportFarm(t, b, 2, 6)
		var plants plantAnswer
		json.Unmarshal(x.g.must(200, "GET", x.farm.path+"/beds/"+u64(x.farm.beds[0])+"/plants", x.token, nil), &plants)
		plant := plants.Plants[0].ID
		x.g.must(201, "POST", x.farm.path+"/logs", x.token, map[string]any{"type": "harvest", "title": "=1+1", "bed": x.farm.beds[0], "plant": plant,
			"quantity": map[string]any{"value": 3, "unit": "kg"}})
		x.g.must(201, "POST", x.farm.path+"/logs", x.token, map[string]any{"type": "observation", "title": "Whole bed", "bed": x.farm.beds[1]})
		x.g.must(201, "POST", x.farm.path+"/logs", x.token, map[string]any{"type": "observation", "title": "Nowhere"})
		reader := x.g.register("reader")
		x.g.must(201, "POST", x.farm.path+"/createPermission", x.token, map[string]string{"username": "reader", "permission": "u"})
		stranger := x.g.register("stranger")
		if code, _ := x.g.call("GET", x.farm.path+"/export/plants.csv", stranger, nil); code != 404 {
			t.Fatalf("stranger: %d", code)
		}

		data, ct, disp := x.get(t, "plants.geojson", reader)
		var fc struct{ Features []json.RawMessage }
		if err := json.Unmarshal(data, &fc); err != nil || ct != "application/geo+json" || len(fc.Features) != x.placed ||
			!strings.Contains(disp, `filename="garden-`+u64(x.farm.garden)+`-plants.geojson"`) {
			t.Fatalf("plants.geojson: %d features of %d placed, %q %q, %v", len(fc.Features), x.placed, ct, disp, err)
		}
		data, ct, _ = x.get(t, "plants.csv", reader)
		rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
		if err != nil || len(rows) != 1+12 || !strings.HasPrefix(ct, "text/csv") || rows[1][2] != plant {
			t.Fatalf("plants.csv: %d rows, %q, %v", len(rows), ct, err)
		}
		data, _, _ = x.get(t, "beds.csv", reader)
		rows, _ = csv.NewReader(bytes.NewReader(data)).ReadAll()
		if len(rows) != 3 || rows[1][1] != x.ds.Beds[0].Name || rows[1][3] != "6" {
			t.Fatalf("beds.csv %v", rows)
		}
		data, _, _ = x.get(t, "logs.csv", reader)
		rows, _ = csv.NewReader(bytes.NewReader(data)).ReadAll()
		if len(rows) != 4 || rows[3][2] != "'=1+1" {
			t.Fatalf("logs.csv %v", rows)
		}
		data, _, _ = x.get(t, "logs.geojson", reader)
		fc.Features = nil
		if err := json.Unmarshal(data, &fc); err != nil || len(fc.Features) != 2 {
			t.Fatalf("logs.geojson: %d features, %v", len(fc.Features), err)
		}
		data, ct, disp = x.get(t, "garden.zip", reader)
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil || ct != "application/zip" || !strings.Contains(disp, "garden.zip") || len(zr.File) != 8 {
			t.Fatalf("garden.zip: %v, %q, %v", zr, ct, err)
		}

		// A bed the spatial server cannot answer for: beds.csv says why, the rest goes on.
		x.srv.FailProject(x.ds.Beds[1].ProjectUUID, codes.Unavailable)
		data, _, _ = x.get(t, "beds.csv", reader)
		rows, _ = csv.NewReader(bytes.NewReader(data)).ReadAll()
		if len(rows) != 3 || rows[2][16] == "" || rows[1][16] != "" {
			t.Fatalf("beds.csv with a bed down: %v", rows)
		}
		data, _, _ = x.get(t, "plants.csv", reader)
		if rows, _ = csv.NewReader(bytes.NewReader(data)).ReadAll(); len(rows) != 1+6 {
			t.Fatalf("plants.csv with a bed down: %d rows", len(rows))
		}
	})
}
