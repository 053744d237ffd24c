package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial/demo"
)

// rawLines reads the beds stream as generic objects, to see which keys are sent.
func rawLines(t *testing.T, ss *spatialSetup) []map[string]json.RawMessage {
	t.Helper()
	res := ss.g.get(context.Background(), ss.garden+"/beds", ss.token)
	defer res.Body.Close()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func decodeRaw[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// TestCompatFieldsBesideSeedFields: the fields the original PlantMap client reads are
// sent beside the seed's, never instead of them: soil_humidity equals soil_humidty,
// bed_id equals bedid, avg_plant_lat/lon are the mean of plant_coords (null, not
// absent, before any position is known), and every plant_coords entry names its
// cloud. A plant without a yield has none (not null, which the client shows as 0).
func TestCompatFieldsBesideSeedFields(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 5, Beds: 2, Plants: 20}, demo.ServerOptions{})

	for _, l := range rawLines(t, ss) {
		for _, k := range []string{"avg_plant_lat", "avg_plant_lon"} {
			if string(l[k]) != "null" {
				t.Errorf("bed %s before any download: %s = %s, want null", l["id"], k, l[k])
			}
		}
	}
	ss.g.waitClouds()

	lines := rawLines(t, ss)
	if len(lines) != len(ss.beds) {
		t.Fatalf("%d lines, want %d", len(lines), len(ss.beds))
	}
	withYield, withoutYield := 0, 0
	for i, l := range lines {
		what := "bed " + string(l["id"])
		if string(l["soil_humidity"]) != string(l["soil_humidty"]) || l["soil_humidty"] == nil {
			t.Errorf("%s: soil_humidity %s, soil_humidty %s", what, l["soil_humidity"], l["soil_humidty"])
		}
		plants, positions := expectPositions(t, ss.ds, ss.ds.Beds[i].ProjectUUID)
		type coord struct {
			Lat, Lon float64
			PlantID  string `json:"plant_id"`
		}
		coords := decodeRaw[[]coord](t, l["plant_coords"])
		var wantIDs []string
		for j, p := range positions {
			if p != nil {
				wantIDs = append(wantIDs, plants[j].Cloud.UUID)
			}
		}
		if len(coords) != len(wantIDs) || len(coords) == 0 {
			t.Fatalf("%s: %d plant_coords, want %d", what, len(coords), len(wantIDs))
		}
		var lat, lon float64
		for j, c := range coords {
			if c.PlantID != wantIDs[j] {
				t.Errorf("%s: plant_coords[%d].plant_id %q, want %q", what, j, c.PlantID, wantIDs[j])
			}
			lat += c.Lat / float64(len(coords))
			lon += c.Lon / float64(len(coords))
		}
		gotLat, gotLon := decodeRaw[float64](t, l["avg_plant_lat"]), decodeRaw[float64](t, l["avg_plant_lon"])
		if math.Abs(gotLat-lat) > 1e-9 || math.Abs(gotLon-lon) > 1e-9 {
			t.Errorf("%s: avg %v,%v, want %v,%v", what, gotLat, gotLon, lat, lon)
		}

		// The bed's plants.
		var body struct {
			Plants []map[string]json.RawMessage `json:"plants"`
		}
		if err := json.Unmarshal(ss.g.must(200, "GET", ss.garden+"/beds/"+u64(ss.beds[i])+"/plants", ss.token, nil), &body); err != nil {
			t.Fatal(err)
		}
		for j, p := range body.Plants {
			pwhat := what + " plant " + plants[j].Name
			if string(p["bed_id"]) != u64(ss.beds[i]) || string(p["bedid"]) != u64(ss.beds[i]) {
				t.Errorf("%s: bed_id %s bedid %s, want %d", pwhat, p["bed_id"], p["bedid"], ss.beds[i])
			}
			if string(p["soil_humidity"]) != string(p["soil_humidty"]) {
				t.Errorf("%s: soil_humidity %s, soil_humidty %s", pwhat, p["soil_humidity"], p["soil_humidty"])
			}
			if y, ok := p["yield"]; ok {
				withYield++
				if plants[j].Yield == nil || decodeRaw[float64](t, y) != *plants[j].Yield {
					t.Errorf("%s: yield %s, want %v", pwhat, y, ptrText(plants[j].Yield))
				}
			} else {
				withoutYield++
				if plants[j].Yield != nil {
					t.Errorf("%s: yield missing, want %v", pwhat, *plants[j].Yield)
				}
			}
		}
	}
	if withYield == 0 || withoutYield == 0 {
		t.Errorf("%d plants with a yield, %d without: the dataset has both", withYield, withoutYield)
	}
}

// TestCompatLineGap: with --compat-line-gap the stream waits that long before every
// line but the first, so it cannot take less than (beds − 1) gaps, and still sends
// every bed whole. Out-of-range gaps are refused at start.
func TestCompatLineGap(t *testing.T) {
	const gap = 40 * time.Millisecond
	ss := newSpatialSetup(t, demo.Options{Seed: 2, Beds: 3, Plants: 6}, demo.ServerOptions{},
		func(c *server.Config) { c.CompatLineGap = gap })
	ss.g.streamBeds(ss.garden, ss.token) // warm the spatial cache
	start := time.Now()
	lines := ss.g.streamBeds(ss.garden, ss.token)
	if took := time.Since(start); took < 2*gap {
		t.Errorf("3 beds with a %v gap took %v", gap, took)
	}
	if len(lines) != len(ss.beds) {
		t.Fatalf("%d lines, want %d", len(lines), len(ss.beds))
	}
	for i, l := range lines {
		if l.ID != ss.beds[i] || l.Error != "" || l.Plant == "" {
			t.Errorf("line %d: %+v", i, l)
		}
	}

	for _, bad := range []time.Duration{-time.Millisecond, server.MaxCompatLineGap + time.Millisecond} {
		if err := server.CheckCompatLineGap(bad); err == nil || !strings.Contains(err.Error(), "--compat-line-gap") {
			t.Errorf("gap %v: %v", bad, err)
		}
		if _, err := newServer(t, server.Config{DataDir: t.TempDir(), CompatLineGap: bad}); err == nil {
			t.Errorf("New accepted a gap of %v", bad)
		}
	}
}
