package server_test

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// scanAgain is b after a robot's new scan of a spatial server that adds a measurement
// geometry per scan: every plant gets a new measurement geometry (new uuid, a later
// stamp, humidity set to humidity) and the old ones are pruned.
func scanAgain(b demo.Bed, suffix string, humidity float64) demo.Bed {
	b.Geometries = append([]demo.Geometry(nil), b.Geometries...)
	b.Measurements = maps.Clone(b.Measurements)
	for i, g := range b.Geometries {
		if g.Type != demo.TypeMeasurement {
			continue
		}
		data := maps.Clone(b.Measurements[g.UUID])
		data["humidity"] = humidity
		g.UUID += suffix
		g.Stamp = g.Stamp.Add(24 * time.Hour)
		b.Measurements[g.UUID] = data
		b.Geometries[i] = g
	}
	return b
}

type plantAnswer struct {
	Plants []struct {
		ID          string   `json:"id"`
		BedName     string   `json:"bed_name"`
		SoilHumidty *float64 `json:"soil_humidty"`
	} `json:"plants"`
}

// TestPlantIDsStayAcrossScans: a plant's id in the plants answer is the one gardend
// first reported for its name, also after the spatial server replaced every
// measurement geometry by a new one (and after a restart); its values are the new
// measurement's. Beds and plants carry the bed's name: as registered, else the
// project's.
func TestPlantIDsStayAcrossScans(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		ds := demo.Generate(demo.Options{Seed: 5, Beds: 2, Plants: 4})
		srv := startDemoSpatial(t, ds, demo.ServerOptions{})
		g := startGardendOn(t, b, server.Config{Now: func() time.Time { return ds.Now },
			Spatial: spatial.ClientConfig{Addr: srv.Addr(), CacheTTL: spatial.CacheDisabled}})
		token := g.register("gardener")
		f := g.gardenWithBeds(token, nil)
		var named, unnamed struct{ ID uint64 }
		json.Unmarshal(g.must(201, "POST", f.path+"/beds", token, map[string]string{"uuid": ds.Beds[0].ProjectUUID, "name": "Bed 6"}), &named)
		json.Unmarshal(g.must(201, "POST", f.path+"/beds", token, map[string]string{"uuid": ds.Beds[1].ProjectUUID}), &unnamed)
		plants := func(bed uint64) plantAnswer {
			var a plantAnswer
			json.Unmarshal(g.must(200, "GET", f.path+"/beds/"+u64(bed)+"/plants", token, nil), &a)
			return a
		}
		first := plants(named.ID)
		if len(first.Plants) != 4 {
			t.Fatalf("%d plants", len(first.Plants))
		}
		for i, p := range first.Plants {
			if p.ID != ds.Beds[0].Plants[i].MeasurementUUID || p.BedName != "Bed 6" {
				t.Fatalf("plant %d: id %q bed_name %q", i, p.ID, p.BedName)
			}
		}
		for _, p := range plants(unnamed.ID).Plants {
			if p.BedName != ds.Beds[1].Name || p.BedName == "" {
				t.Fatalf("bed_name %q, want the project's %q", p.BedName, ds.Beds[1].Name)
			}
		}
		lines := g.streamBeds(f.path, token)
		if len(lines) != 2 || lines[0].Name != "Bed 6" || lines[1].Name != ds.Beds[1].Name {
			t.Fatalf("stream %+v", lines)
		}

		for scan, h := range []float64{0.11, 0.22} {
			srv.SetBed(scanAgain(*ds.Bed(ds.Beds[0].ProjectUUID), "-scan"+u64(uint64(scan)), h))
			if scan == 1 {
				g.restart()
			}
			again := plants(named.ID)
			for i, p := range again.Plants {
				if p.ID != first.Plants[i].ID || p.SoilHumidty == nil || *p.SoilHumidty != h {
					t.Fatalf("scan %d plant %d: id %q humidity %v; want %q %v", scan, i, p.ID, p.SoilHumidty, first.Plants[i].ID, h)
				}
			}
		}
	})
}
