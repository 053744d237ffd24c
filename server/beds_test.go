package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/spatial/demo"
)

// spatialSetup is a demo spatial server, gardend pointed at it with the dataset's
// recording instant as its clock, and a user owning a garden with one bed per project.
type spatialSetup struct {
	ds    *demo.Dataset
	demo  *demo.Server
	g     *gardend
	token string
	farm
	garden string // farm.path
}

func newSpatialSetup(t *testing.T, opts demo.Options, so demo.ServerOptions, configure ...func(*server.Config)) *spatialSetup {
	t.Helper()
	ds := demo.Generate(opts)
	ss := &spatialSetup{ds: ds, demo: startDemoSpatial(t, ds, so)}
	cfg := server.Config{
		Now:     func() time.Time { return ds.Now },
		Spatial: spatial.ClientConfig{Addr: ss.demo.Addr(), CallTimeout: 2 * time.Second},
	}
	for _, f := range configure {
		f(&cfg)
	}
	ss.g = startGardend(t, cfg)
	ss.token = ss.g.register("gardener")
	ss.farm = ss.g.gardenWithBeds(ss.token, ds.ProjectUUIDs())
	ss.garden = ss.farm.path
	return ss
}

func (ss *spatialSetup) plantsURL(i int) string {
	return ss.g.base + ss.garden + "/beds/" + u64(ss.beds[i]) + "/plants"
}

// checkBedLines compares the stream with the dataset; withCoords says whether the
// positions are expected yet.
func (ss *spatialSetup) checkBedLines(t *testing.T, lines []bedLine, withCoords bool) {
	t.Helper()
	if len(lines) != len(ss.beds) {
		t.Fatalf("%d lines, want %d", len(lines), len(ss.beds))
	}
	for i, l := range lines {
		what := "bed " + u64(l.ID)
		if l.ID != ss.beds[i] || l.Plants != ss.plantsURL(i) || l.Error != "" {
			t.Fatalf("line %d: id %d plants %q error %q", i, l.ID, l.Plants, l.Error)
		}
		plants, positions := expectPositions(t, ss.ds, ss.ds.Beds[i].ProjectUUID)
		e := expectSummary(plants, ss.ds.Now)
		checkSummary(t, what, e, l.Plant, l.Variety, l.SoilHumidty, l.Yield, l.Harvest, l.Health)
		var want []latLon
		for _, p := range positions {
			if p != nil {
				want = append(want, *p)
			}
		}
		if !withCoords {
			if l.has("plant_coords") {
				t.Errorf("%s: plant_coords before any cloud was fetched: %v", what, l.PlantCoords)
			}
			continue
		}
		checkCoords(t, what, l.PlantCoords, want)
	}
}

// TestBedsStreamMatchesDataset: bed lines carry the averages of the dataset's raw
// values; positions appear once the background downloads are done, equal to
// PlantPosition of the dataset's clouds, and the clouds are kept as PLY files.
func TestBedsStreamMatchesDataset(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 3, Plants: 33}, demo.ServerOptions{})
	first := ss.g.streamBeds(ss.garden, ss.token)
	ss.checkBedLines(t, first, false)
	// The oddities of bed 0 leave fields out rather than zero; nothing is all missing.
	for _, l := range first {
		for _, k := range []string{"plant", "variety", "soil_humidty", "harvest", "yield", "health"} {
			if !l.has(k) {
				t.Errorf("bed %d lacks %s: %v", l.ID, k, l.keys)
			}
		}
	}

	ss.g.waitClouds()
	ss.checkBedLines(t, ss.g.streamBeds(ss.garden, ss.token), true)

	// Every cloud that can give a position was fetched once and kept as PLY.
	fetched := 0
	for _, b := range ss.ds.Beds {
		plants, positions := expectPositions(t, ss.ds, b.ProjectUUID)
		for i, p := range plants {
			if positions[i] == nil {
				continue
			}
			fetched++
			path := filepath.Join(ss.g.cfg.DataDir, pointcloud.DirName, b.ProjectUUID, p.Cloud.UUID+".ply")
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			pc, err := cloud.ReadPLY(f)
			f.Close()
			src := b.Clouds[p.Cloud.UUID]
			if err != nil || pc.Width*pc.Height != src.Width*src.Height {
				t.Errorf("%s: %d vertices, want %d (%v)", path, pc.Width*pc.Height, src.Width*src.Height, err)
			}
		}
	}
	if got := ss.demo.Stats().Calls[mCloud]; got != int64(fetched) {
		t.Errorf("%d cloud downloads, want %d (one per cloud with a position)", got, fetched)
	}
	if jobs, _ := ss.g.srv.Store().CloudJobs(); len(jobs) != 0 {
		t.Errorf("queue not empty: %+v", jobs)
	}
}

// TestPlantsMatchDataset: the plants endpoint gives each plant's own values, in name
// order, with its position once known.
func TestPlantsMatchDataset(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 2, Plants: 33}, demo.ServerOptions{})
	for round := range 2 {
		for i, b := range ss.ds.Beds {
			var got struct {
				Plants []map[string]json.RawMessage `json:"plants"`
			}
			json.Unmarshal(ss.g.must(200, "GET", ss.garden+"/beds/"+u64(ss.beds[i])+"/plants", ss.token, nil), &got)
			plants, positions := expectPositions(t, ss.ds, b.ProjectUUID)
			if len(got.Plants) != len(plants) {
				t.Fatalf("bed %d: %d plants, want %d", i, len(got.Plants), len(plants))
			}
			for k, p := range plants {
				raw := got.Plants[k]
				var v struct {
					ID          string   `json:"id"`
					BedID       uint64   `json:"bedid"`
					Plant       string   `json:"plant"`
					Variety     string   `json:"variety"`
					SoilHumidty *float64 `json:"soil_humidty"`
					Harvest     *string  `json:"harvest"`
					Yield       *float64 `json:"yield"`
					Health      []health `json:"health"`
					PlantCoords *latLon  `json:"plant_coords"`
				}
				data, _ := json.Marshal(raw)
				json.Unmarshal(data, &v)
				what := "bed " + u64(ss.beds[i]) + " " + p.Name
				if v.ID != p.ID || v.BedID != ss.beds[i] {
					t.Errorf("%s: id %q bedid %d, want %q %d", what, v.ID, v.BedID, p.ID, ss.beds[i])
				}
				checkSummary(t, what, expectSummary([]spatial.Plant{p}, ss.ds.Now), v.Plant, v.Variety, v.SoilHumidty, v.Yield, v.Harvest, v.Health)
				for key := range raw {
					if !strings.Contains(" id bedid bed_name plant variety soil_humidty harvest yield health plant_coords bed_id soil_humidity pointcloud ", " "+key+" ") {
						t.Errorf("%s: unexpected field %q", what, key)
					}
				}
				switch {
				case round == 0 && v.PlantCoords != nil:
					t.Errorf("%s: coordinates before the cloud was fetched", what)
				case round == 1 && positions[k] == nil && v.PlantCoords != nil:
					t.Errorf("%s: coordinates %v for a plant without a position", what, *v.PlantCoords)
				case round == 1 && positions[k] != nil:
					if v.PlantCoords == nil {
						t.Errorf("%s: no coordinates after the download", what)
					} else {
						checkCoords(t, what, []latLon{*v.PlantCoords}, []latLon{*positions[k]})
					}
				}
			}
		}
		ss.g.waitClouds()
	}
}
