package demo_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/spatial/demo"
)

var simStart = time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)

// TestSimulationDeterministic: a scan is a function of the dataset and the time
// alone; it keeps every uuid and updates the measurements in place (stamp t).
func TestSimulationDeterministic(t *testing.T) {
	a := demo.NewSimulation(demo.Generate(demo.Options{Seed: 4}))
	b := demo.NewSimulation(demo.Generate(demo.Options{Seed: 4}))
	at := simStart.Add(1234567 * time.Second)
	sa, sb := a.Scan(at), b.Scan(at)
	if !reflect.DeepEqual(sa, sb) {
		t.Fatal("two simulations of the same dataset differ")
	}
	base := demo.Generate(demo.Options{Seed: 4})
	for i, bed := range sa {
		if len(bed.Geometries) != len(base.Beds[i].Geometries) {
			t.Fatalf("bed %d: %d geometries, %d before", i, len(bed.Geometries), len(base.Beds[i].Geometries))
		}
		for j, g := range bed.Geometries {
			old := base.Beds[i].Geometries[j]
			if g.UUID != old.UUID || g.Name != old.Name {
				t.Fatalf("geometry %s changed its uuid or name", old.UUID)
			}
			if want := old.Stamp; g.Type == demo.TypeMeasurement {
				want = at.Truncate(time.Second)
				if !g.Stamp.Equal(want) {
					t.Fatalf("measurement stamp %v, want %v", g.Stamp, want)
				}
			} else if !g.Stamp.Equal(want) {
				t.Fatalf("%s geometry restamped", g.Type)
			}
		}
	}
	if reflect.DeepEqual(a.Scan(at.Add(6*time.Hour)), sa) {
		t.Error("six hours later nothing changed")
	}
}

// TestSimulationStory: over 60 days of scans every two hours, plants not in trouble keep
// their levels within 0–3 and their humidity within 0–1; each bed's trouble plant
// goes above 3 at some point; the garden always has something to alert about (a
// level at its default threshold or humidity below 0.25); waterings wet the soil;
// plants grow between replantings.
func TestSimulationStory(t *testing.T) {
	if testing.Short() {
		t.Skip("60 days of scans")
	}
	ds := demo.Generate(demo.Options{Seed: 1})
	sim := demo.NewSimulation(ds)
	trouble := map[string]bool{}
	above := map[string]bool{}
	for _, b := range ds.Beds {
		n := 0
		for _, p := range b.Plants {
			if p.Trouble {
				trouble[p.MeasurementUUID] = true
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d plants in trouble", b.Name, n)
		}
	}
	growth := map[string]float64{}
	quiet := 0
	for h := 0; h < 60*24; h += 2 {
		at := simStart.Add(time.Duration(h) * time.Hour)
		alerting := false
		for _, b := range sim.Scan(at) {
			for uuid, m := range b.Measurements {
				if v, ok := m["humidity"].(float64); ok {
					if v < 0 || v > 1 {
						t.Fatalf("humidity %v", v)
					}
					alerting = alerting || v < 0.25
				}
				for k, v := range m {
					l, ok := v.(int64)
					if !ok || !strings.HasSuffix(k, "_level") {
						continue
					}
					typ := m[strings.TrimSuffix(k, "level")+"type"]
					if l > 3 {
						if !trouble[uuid] {
							t.Fatalf("%s %s: %s level %d on a plant not in trouble", b.Name, uuid, typ, l)
						}
						above[uuid] = true
					}
					if l < 0 {
						t.Fatalf("level %d", l)
					}
					alerting = alerting || typ == "diseases" && l >= 2 || l >= 3
				}
				if g, ok := m["growth_state"].(float64); ok {
					if prev, seen := growth[uuid]; seen && g < prev && g > 0.05 {
						t.Fatalf("%s shrank from %v to %v", uuid, prev, g)
					}
					growth[uuid] = g
				}
			}
		}
		if !alerting {
			quiet++
		}
	}
	if quiet > 0 {
		t.Errorf("%d of 720 scans with nothing to alert about", quiet)
	}
	if len(above) != len(trouble) {
		t.Errorf("%d of %d trouble plants went above level 3", len(above), len(trouble))
	}
	b := ds.Beds[2]
	ws := sim.Waterings(b.ProjectUUID, simStart, simStart.Add(60*24*time.Hour))
	if len(ws) < 60/6 || len(ws) > 60/3+1 {
		t.Fatalf("%d waterings in 60 days", len(ws))
	}
	for _, w := range ws {
		before, _ := sim.ScanBed(b.ProjectUUID, w.Add(-time.Minute))
		after, _ := sim.ScanBed(b.ProjectUUID, w.Add(time.Minute))
		p := b.Plants[0].MeasurementUUID
		hb, ok1 := before.Measurements[p]["humidity"].(float64)
		ha, ok2 := after.Measurements[p]["humidity"].(float64)
		if ok1 && ok2 && ha < hb+0.2 {
			t.Errorf("watering at %v: humidity %v → %v", w, hb, ha)
		}
	}
}

// TestGenerateLevels: the generated garden's levels stay within 0–3 except on each
// bed's plant in trouble.
func TestGenerateLevels(t *testing.T) {
	for seed := range int64(5) {
		ds := demo.Generate(demo.Options{Seed: seed})
		for _, b := range ds.Beds {
			for _, p := range b.Plants {
				for k, v := range b.Measurements[p.MeasurementUUID] {
					if l, ok := v.(int64); ok && strings.HasSuffix(k, "_level") && l > 3 && !p.Trouble {
						t.Errorf("seed %d %s %s: %s = %d", seed, b.Name, p.Name, k, l)
					}
				}
			}
		}
	}
}
