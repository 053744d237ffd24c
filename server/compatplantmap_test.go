package server_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// lockedBuffer collects a server's log lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func compatPlantMap(c *server.Config) { c.CompatPlantMap = true }

// rawPlants is a bed's plants answer as generic objects, to see which keys are sent.
func rawPlants(t *testing.T, ss *spatialSetup, bed int) []map[string]json.RawMessage {
	t.Helper()
	var body struct {
		Plants []map[string]json.RawMessage `json:"plants"`
	}
	if err := json.Unmarshal(ss.g.must(200, "GET", ss.garden+"/beds/"+u64(ss.beds[bed])+"/plants", ss.token, nil), &body); err != nil {
		t.Fatal(err)
	}
	return body.Plants
}

// TestCompatPlantMapPlaceholders: with --compat plantmap the plants answer carries the
// original's placeholders where a plant has no value (plant "Error", variety "N/A",
// harvest "0 week", yield 0, soil_humidity 0, health []), its real values where it
// has them, and nothing else changes: every other key of the plants answer is as
// without the option, the seed's soil_humidty stays absent when unknown, and the
// beds stream is byte for byte the same.
func TestCompatPlantMapPlaceholders(t *testing.T) {
	opts := demo.Options{Seed: 5, Beds: 2, Plants: 33}
	honest := newSpatialSetup(t, opts, demo.ServerOptions{})
	compat := newSpatialSetup(t, opts, demo.ServerOptions{}, compatPlantMap)

	// The beds stream does not change (read first: the plants calls start downloads).
	a, b := rawStream(t, honest), rawStream(t, compat)
	if a != b || a == "" {
		t.Errorf("beds stream without the option:\n%s\nwith it:\n%s", a, b)
	}

	placeholders := map[string]string{"plant": `"Error"`, "variety": `"N/A"`, "harvest": `"0 week"`, "yield": "0", "soil_humidity": "0", "health": "[]"}
	filled := map[string]int{}
	for i := range compat.beds {
		plants, _ := expectPositions(t, compat.ds, compat.ds.Beds[i].ProjectUUID)
		got, base := rawPlants(t, compat, i), rawPlants(t, honest, i)
		if len(got) != len(plants) || len(base) != len(plants) {
			t.Fatalf("bed %d: %d and %d plants, want %d", i, len(got), len(base), len(plants))
		}
		for j, p := range got {
			what := "plant " + plants[j].Name
			for k, v := range base[j] {
				if k == "pointcloud" || k == "plant_coords" {
					continue // the background downloads move on between the two calls
				}
				if !bytes.Equal(p[k], v) {
					t.Errorf("%s: %s is %s with the option, %s without", what, k, p[k], v)
				}
			}
			for k, v := range p {
				if _, ok := base[j][k]; ok {
					continue
				}
				if placeholders[k] != string(v) {
					t.Errorf("%s: %s = %s only with the option; the placeholder is %s", what, k, v, placeholders[k])
				}
				filled[k]++
			}
			for k := range placeholders {
				if p[k] == nil {
					t.Errorf("%s: no %s with the option", what, k)
				}
			}
			if plants[j].Humidity == nil && p["soil_humidty"] != nil {
				t.Errorf("%s: soil_humidty %s without data: the seed's field stays honest", what, p["soil_humidty"])
			}
			if _, ok := spatial.RemainingToHarvest(plants[j], compat.ds.Now); !ok && string(p["harvest"]) != `"0 week"` {
				t.Errorf("%s: harvest %s without a growth state", what, p["harvest"])
			}
		}
	}
	for _, k := range []string{"plant", "variety", "harvest", "yield", "soil_humidity"} {
		if filled[k] == 0 {
			t.Errorf("no plant of the dataset needed a %s placeholder (%v): the test proves nothing", k, filled)
		}
	}

}

func rawStream(t *testing.T, ss *spatialSetup) string {
	t.Helper()
	res := ss.g.get(t.Context(), ss.garden+"/beds", ss.token)
	defer res.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(buf.String(), ss.g.base, "BASE")
}

// TestCompatPlantMapSkipsUnknownProjects: a bed whose project the spatial server does
// not know is an error line by default; with --compat plantmap it is left out, as
// the original did, and the log names it. Any other failure stays an error line.
func TestCompatPlantMapSkipsUnknownProjects(t *testing.T) {
	const unknown = "0badbed0-0000-4000-8000-000000000001"
	for _, compat := range []bool{false, true} {
		var logs lockedBuffer
		ss := newSpatialSetup(t, demo.Options{Seed: 2, Beds: 3, Plants: 6}, demo.ServerOptions{}, func(c *server.Config) {
			c.CompatPlantMap = compat
			c.Logger = zerolog.New(&logs).Level(zerolog.WarnLevel)
		})
		projects := ss.ds.ProjectUUIDs()
		f := ss.g.gardenWithBeds(ss.token, []string{projects[0], unknown, projects[1], projects[2]})
		broken := projects[2] // a failure that is not an unknown project
		ss.demo.SetHook(func(method, project string) (time.Duration, error) {
			if method == demo.MethodProjectDetails && project == broken {
				return 0, status.Error(codes.Internal, "broken for the test")
			}
			return 0, nil
		})
		var ids, errs []uint64
		for _, l := range ss.g.streamBeds(f.path, ss.token) {
			ids = append(ids, l.ID)
			if l.Error != "" {
				errs = append(errs, l.ID)
			}
		}
		wantIDs, wantErrs := f.beds, []uint64{f.beds[1], f.beds[3]}
		if compat {
			wantIDs, wantErrs = []uint64{f.beds[0], f.beds[2], f.beds[3]}, []uint64{f.beds[3]}
		}
		if !slices.Equal(ids, wantIDs) || !slices.Equal(errs, wantErrs) {
			t.Errorf("compat %v: lines of beds %v (errors %v), want %v (errors %v)", compat, ids, errs, wantIDs, wantErrs)
		}
		logged := strings.Contains(logs.String(), `"project":"`+unknown+`"`) && strings.Contains(logs.String(), "left out of the beds stream")
		if logged != compat {
			t.Errorf("compat %v: the log says %v about the unknown project:\n%s", compat, logged, logs.String())
		}
	}
}

// TestCheckCompat: --compat takes plantmap or nothing.
func TestCheckCompat(t *testing.T) {
	for _, ok := range []string{"", "plantmap"} {
		if err := server.CheckCompat(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"PlantMap", "plantmap,x", "django"} {
		if err := server.CheckCompat(bad); err == nil || !strings.Contains(err.Error(), `the one compatibility mode is "plantmap"`) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
