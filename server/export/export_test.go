package export_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server/export"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// TestWorldFile: the world file maps the picture's outer pixel corners back onto the
// three georeferenced corners (and the fourth onto the parallelogram's), with the
// first pixel's centre half a pixel in, for a rotated, skewed picture and one astride
// the antimeridian.
func TestWorldFile(t *testing.T) {
	for _, c := range []struct {
		name       string
		tl, tr, bl store.Coordinate
		w, h       int
	}{
		{"rotated", store.Coordinate{Name: "top_left", Latitude: 52.2801, Longitude: 8.0201},
			store.Coordinate{Name: "top_right", Latitude: 52.2806, Longitude: 8.0243},
			store.Coordinate{Name: "bottom_left", Latitude: 52.2779, Longitude: 8.0209}, 1500, 1100},
		{"antimeridian", store.Coordinate{Name: "top_left", Latitude: -16.5, Longitude: 179.999},
			store.Coordinate{Name: "top_right", Latitude: -16.5, Longitude: -179.998},
			store.Coordinate{Name: "bottom_left", Latitude: -16.501, Longitude: 179.999}, 300, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, err := export.WorldFile(store.Coordinates{c.bl, c.tr, c.tl}, c.w, c.h)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(text, "\r\n"), "\r\n")
			if len(lines) != 6 {
				t.Fatalf("%d lines: %q", len(lines), text)
			}
			var v [6]float64
			for i, l := range lines {
				if v[i], err = strconv.ParseFloat(l, 64); err != nil {
					t.Fatal(err)
				}
			}
			// A, D, B, E, C, F: lon = A·col + B·row + C, lat = D·col + E·row + F.
			a, d, b, e, cc, f := v[0], v[1], v[2], v[3], v[4], v[5]
			at := func(col, row float64) (lat, lon float64) { return d*col + e*row + f, a*col + b*row + cc }
			W, H := float64(c.w), float64(c.h)
			lon := func(l float64) float64 { // unwrap onto the top left's side
				for l-c.tl.Longitude > 180 {
					l -= 360
				}
				for l-c.tl.Longitude < -180 {
					l += 360
				}
				return l
			}
			for _, k := range []struct {
				col, row, lat, lon float64
			}{
				{-0.5, -0.5, c.tl.Latitude, c.tl.Longitude},
				{W - 0.5, -0.5, c.tr.Latitude, lon(c.tr.Longitude)},
				{-0.5, H - 0.5, c.bl.Latitude, lon(c.bl.Longitude)},
				{W - 0.5, H - 0.5, c.tr.Latitude + c.bl.Latitude - c.tl.Latitude, lon(c.tr.Longitude) + lon(c.bl.Longitude) - c.tl.Longitude},
			} {
				lat, lo := at(k.col, k.row)
				if math.Abs(lat-k.lat) > 1e-12 || math.Abs(lo-k.lon) > 1e-12 {
					t.Errorf("pixel corner (%v, %v) maps to %.12f,%.12f, want %.12f,%.12f", k.col, k.row, lat, lo, k.lat, k.lon)
				}
			}
			// The first pixel's centre is half a pixel in from the corner along both
			// edges.
			lat, lo := at(0, 0)
			wantLat := c.tl.Latitude + (c.tr.Latitude-c.tl.Latitude)/W/2 + (c.bl.Latitude-c.tl.Latitude)/H/2
			wantLon := c.tl.Longitude + (lon(c.tr.Longitude)-c.tl.Longitude)/W/2 + (lon(c.bl.Longitude)-c.tl.Longitude)/H/2
			if math.Abs(lat-wantLat) > 1e-12 || math.Abs(lo-wantLon) > 1e-12 || f != lat || cc != lo {
				t.Errorf("first pixel centre %v,%v, want %v,%v", lat, lo, wantLat, wantLon)
			}
		})
	}
	if _, err := export.WorldFile(store.Coordinates{{Name: "top_left"}}, 10, 10); err == nil {
		t.Fatal("a world file without corners")
	}
}

// source is an export.Source held in memory.
type source struct {
	beds  []export.Bed
	logs  []store.Log
	image []byte
	cs    store.Coordinates
}

func (s *source) Garden() store.Garden                       { return store.Garden{ID: 7, Name: "Nord/Garten", Company: 1} }
func (s *source) Beds(context.Context) ([]export.Bed, error) { return s.beds, nil }
func (s *source) Now() time.Time                             { return time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC) }
func (s *source) EachLog(_ context.Context, fn func(store.Log) error) error {
	for _, l := range s.logs {
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}
func (s *source) Image(context.Context) (io.ReadCloser, store.Coordinates, error) {
	if s.image == nil {
		return nil, nil, export.ErrNoImage
	}
	return io.NopCloser(bytes.NewReader(s.image)), s.cs, nil
}

func fixture(t *testing.T) *source {
	t.Helper()
	hum, yield := 0.42, 1.5
	planted := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	growth := 0.5
	placed := export.Plant{Plant: spatial.Plant{Name: "=plant 1", ID: "m-1", Species: "tomato", Variety: "@Moneymaker",
		Humidity: &hum, Yield: &yield, GrowthState: &growth, PlantedAt: &planted,
		Health: []spatial.Health{{Type: "water", Level: 2}, {Type: "diseases", Level: 1}, {Type: "frost", Level: 3}}},
		Position: &store.LatLon{Lat: -33.9, Lon: 18.4}}
	unplaced := export.Plant{Plant: spatial.Plant{Name: "plant 2", ID: "m-2", Species: "tomato"}}
	bed := export.Bed{Bed: store.Bed{ID: 3, UUID: "p-1", Name: "Bed 6"}, Name: "Bed 6", Plants: []export.Plant{placed, unplaced}}
	down := export.Bed{Bed: store.Bed{ID: 4, UUID: "p-2"}, Name: "-down", Err: "spatial server unavailable"}
	at := time.Date(2026, 4, 30, 7, 0, 0, 0, time.UTC)
	logs := []store.Log{
		{ID: 2, Type: store.LogHarvest, Title: "+1 kg", Notes: "line one\nline \"two\", end", At: at, Bed: new(uint64(3)), Plant: new("m-1"),
			Quantity: &store.Quantity{Value: 1.25, Unit: "kg"}, Status: store.LogDone, Author: "ann", Created: at, Updated: at, Photos: []uint64{5, 6}},
		{ID: 1, Type: store.LogTask, Title: "=HYPERLINK(\"http://x\")", At: at.Add(-time.Hour), Bed: new(uint64(3)), Assignee: new("@bob"),
			Status: store.LogPending, Author: "ann", Created: at, Updated: at},
		{ID: 3, Type: store.LogObservation, Title: "\tcmd", At: at.Add(-2 * time.Hour), Status: store.LogDone, Author: "-x", Created: at, Updated: at},
	}
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	cs := store.Coordinates{{Name: "top_left", Latitude: 52.3, Longitude: 8.0}, {Name: "top_right", Latitude: 52.3, Longitude: 8.004},
		{Name: "bottom_left", Latitude: 52.297, Longitude: 8.0}}
	return &source{beds: []export.Bed{bed, down}, logs: logs, image: img.Bytes(), cs: cs}
}

func write(t *testing.T, name string, src export.Source) []byte {
	t.Helper()
	f, ok := export.FileNamed(name)
	if !ok {
		t.Fatalf("no export %s", name)
	}
	var buf bytes.Buffer
	if err := f.Write(context.Background(), &buf, src); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readCSV(t *testing.T, data []byte) []map[string]string {
	t.Helper()
	if !bytes.HasSuffix(data, []byte("\r\n")) || !bytes.Contains(data[:bytes.IndexByte(data, '\n')+1], []byte("\r\n")) {
		t.Fatal("no CRLF line ends")
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// TestCSV: RFC 4180 files whose text cannot run as a formula, with numbers (negative
// coordinates too) as they are.
func TestCSV(t *testing.T) {
	src := fixture(t)
	plants := readCSV(t, write(t, "plants.csv", src))
	if len(plants) != 2 {
		t.Fatalf("%d plants", len(plants))
	}
	p := plants[0]
	for k, want := range map[string]string{"bed": "3", "bed_name": "Bed 6", "plant": "m-1", "name": "'=plant 1", "variety": "'@Moneymaker",
		"latitude": "-33.9", "longitude": "18.4", "soil_humidity": "0.42", "yield": "1.5", "harvest": "9 week", "harvest_weeks": "9",
		"health_water": "2", "health_nutrients": "", "health_diseases": "1", "health": "water 2, diseases 1, frost 3"} {
		if p[k] != want {
			t.Errorf("plants.csv %s = %q, want %q", k, p[k], want)
		}
	}
	if plants[1]["latitude"] != "" || plants[1]["plant"] != "m-2" {
		t.Errorf("unplaced plant %v", plants[1])
	}
	beds := readCSV(t, write(t, "beds.csv", src))
	if len(beds) != 2 || beds[0]["plants"] != "2" || beds[0]["latitude"] != "-33.9" || beds[1]["name"] != "'-down" || beds[1]["error"] != "spatial server unavailable" {
		t.Errorf("beds.csv %v", beds)
	}
	logs := readCSV(t, write(t, "logs.csv", src))
	if len(logs) != 3 {
		t.Fatalf("%d logs", len(logs))
	}
	for k, want := range map[string]string{"id": "2", "title": "'+1 kg", "notes": "line one\nline \"two\", end", "bed_name": "Bed 6",
		"quantity": "1.25", "unit": "kg", "photos": "5 6", "at": "2026-04-30T07:00:00Z"} {
		if logs[0][k] != want {
			t.Errorf("logs.csv %s = %q, want %q", k, logs[0][k], want)
		}
	}
	if logs[1]["title"] != `'=HYPERLINK("http://x")` || logs[1]["assignee"] != "'@bob" || logs[2]["title"] != "'\tcmd" || logs[2]["author"] != "'-x" {
		t.Errorf("formulas: %v %v", logs[1], logs[2])
	}
}

// TestGeoJSON: RFC 7946 collections of points at [longitude, latitude].
func TestGeoJSON(t *testing.T) {
	src := fixture(t)
	var fc struct {
		Type     string
		Features []struct {
			Type     string
			Geometry struct {
				Type        string
				Coordinates []float64
			}
			Properties map[string]any
		}
	}
	if err := json.Unmarshal(write(t, "plants.geojson", src), &fc); err != nil {
		t.Fatal(err)
	}
	if fc.Type != "FeatureCollection" || len(fc.Features) != 1 {
		t.Fatalf("plants %+v", fc)
	}
	f := fc.Features[0]
	if f.Type != "Feature" || f.Geometry.Type != "Point" || f.Geometry.Coordinates[0] != 18.4 || f.Geometry.Coordinates[1] != -33.9 ||
		f.Properties["plant"] != "m-1" || f.Properties["bed_name"] != "Bed 6" || f.Properties["health_water"] != 2.0 || f.Properties["health_nutrients"] != nil {
		t.Fatalf("plant feature %+v", f)
	}
	fc.Features = nil
	if err := json.Unmarshal(write(t, "logs.geojson", src), &fc); err != nil {
		t.Fatal(err)
	}
	// The harvest at its plant, the task at its bed's mean; the bedless log not at all.
	if len(fc.Features) != 2 || fc.Features[0].Properties["id"] != 2.0 || fc.Features[1].Properties["id"] != 1.0 ||
		fc.Features[1].Geometry.Coordinates[0] != 18.4 || fc.Features[0].Properties["quantity"] != 1.25 {
		t.Fatalf("log features %+v", fc.Features)
	}
}

// TestGardenZip: every file, the picture and what places it.
func TestGardenZip(t *testing.T) {
	src := fixture(t)
	data := write(t, "garden.zip", src)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	files := map[string][]byte{}
	for _, f := range zr.File {
		names = append(names, f.Name)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	if got := strings.Join(names, " "); got != "plants.geojson plants.csv beds.csv logs.csv logs.geojson image.png image.pgw image.prj" {
		t.Fatalf("entries %s", got)
	}
	if !bytes.Equal(files["image.png"], src.image) || !bytes.Equal(files["plants.csv"], write(t, "plants.csv", src)) {
		t.Fatal("entries differ from the files")
	}
	want, _ := export.WorldFile(src.cs, 40, 30)
	if string(files["image.pgw"]) != want || !strings.Contains(string(files["image.prj"]), `AUTHORITY["EPSG","4326"]`) {
		t.Fatalf("pgw %q prj %q", files["image.pgw"], files["image.prj"])
	}
	src.image = nil
	zr, err = zip.NewReader(bytes.NewReader(write(t, "garden.zip", src)), int64(len(write(t, "garden.zip", src))))
	if err != nil || len(zr.File) != 5 {
		t.Fatalf("without picture: %v entries, %v", len(zr.File), err)
	}
}

func TestDisposition(t *testing.T) {
	got := export.Disposition(store.Garden{ID: 7, Name: `Nord/Gärten "1"`}, "plants.csv")
	want := `attachment; filename="garden-7-plants.csv"; filename*=UTF-8''Nord_G%C3%A4rten%20_1_-plants.csv`
	if got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
}
