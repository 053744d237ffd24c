package spatial_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// TestBedScansUnderOneName: a server that adds a measurement geometry (and a point
// cloud) per scan under the plant's name gives one plant per name, named by its
// oldest measurement, with the values, labels and cloud of the newest, whatever order
// the geometries are listed in, as the dataset's own account says (demo.WantBed).
func TestBedScansUnderOneName(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC)
	ds := demo.Generate(demo.Options{Seed: 7, Beds: 1})
	b := ds.Beds[0]
	var first demo.Geometry
	for _, g := range b.Geometries {
		if g.Type == demo.TypeMeasurement {
			first = g
			break
		}
	}
	// Two more scans of the first plant, listed before the first one: the newest
	// has other values and another cloud.
	b.Measurements = maps.Clone(b.Measurements)
	b.Measurements["scan-2"] = map[string]any{"humidity": 0.5, "status": "second"}
	b.Measurements["scan-3"] = map[string]any{"humidity": 0.75, "status": "third"}
	scan := func(uuid, typ string, at time.Time) demo.Geometry {
		g := first
		g.UUID, g.Type, g.Stamp = uuid, typ, at
		if typ == demo.TypePointCloud {
			g.FrameID, g.Labels = demo.FrameMap, nil
		}
		return g
	}
	first.Stamp = t0
	b.Geometries = slices.Concat([]demo.Geometry{
		scan("scan-3", demo.TypeMeasurement, t0.Add(48*time.Hour)),
		scan("scan-2", demo.TypeMeasurement, t0.Add(24*time.Hour)),
		scan("cloud-3", demo.TypePointCloud, t0.Add(48*time.Hour)),
	}, b.Geometries)
	// The first scan's geometries, measurement and cloud, are the oldest.
	for i, g := range b.Geometries[3:] {
		if g.Name == first.Name {
			b.Geometries[3+i].Stamp = t0
		}
	}
	ds.Beds[0] = b
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{CacheTTL: spatial.CacheDisabled})
	got, err := c.Bed(context.Background(), b.ProjectUUID)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ds.WantBed(b.ProjectUUID)
	if d := diffBed(got, want); d != "" {
		t.Fatal(d)
	}
	var p spatial.Plant
	for _, q := range got.Plants {
		if q.Name == first.Name {
			p = q
		}
	}
	if p.ID != first.UUID || p.Measurement != "scan-3" || !p.MeasuredAt.Equal(t0.Add(48*time.Hour)) ||
		p.Humidity == nil || *p.Humidity != 0.75 || p.Status != "third" || p.Cloud == nil || p.Cloud.UUID != "cloud-3" {
		t.Fatalf("plant %s", plantString(p))
	}
	if len(got.Plants) != len(ds.Beds[0].Plants) {
		t.Fatalf("%d plants, want %d (one per name)", len(got.Plants), len(ds.Beds[0].Plants))
	}
}
