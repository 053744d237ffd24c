package demo_test

import (
	"encoding/binary"
	"math"
	"reflect"
	"regexp"
	"testing"

	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/spatial/demo"
)

func TestGenerateDeterministic(t *testing.T) {
	a := demo.Generate(demo.Options{Seed: 42, Beds: 2})
	b := demo.Generate(demo.Options{Seed: 42, Beds: 2})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different datasets")
	}
	c := demo.Generate(demo.Options{Seed: 43, Beds: 2})
	if a.Beds[0].ProjectUUID == c.Beds[0].ProjectUUID {
		t.Error("different seeds, same project uuid")
	}
	// Bed i does not depend on how many beds follow it.
	d := demo.Generate(demo.Options{Seed: 42, Beds: 1})
	if !reflect.DeepEqual(a.Beds[0], d.Beds[0]) {
		t.Error("bed 0 depends on the bed count")
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestGenerateContents(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 1})
	if len(ds.Beds) != 6 {
		t.Fatalf("%d beds, want 6", len(ds.Beds))
	}
	seen := map[string]bool{}
	uuid := func(u string) {
		if !uuidRE.MatchString(u) || seen[u] {
			t.Errorf("uuid %q malformed or repeated", u)
		}
		seen[u] = true
	}
	var stats struct {
		noCloud, inMap, bigEndian, float64s, organised, withNaN, ripe, noGrowth, mixedBeds int
	}
	for bi, b := range ds.Beds {
		uuid(b.ProjectUUID)
		if b.Name != "Bed "+string(rune('1'+bi)) {
			t.Errorf("name %q", b.Name)
		}
		// In a row, a few metres apart, eastwards from the origin.
		if math.Abs(b.Geolocation.Lat-ds.Origin.Lat) > 1e-9 || b.Geolocation.Lon < ds.Origin.Lon ||
			b.Geolocation.Lon-ds.Origin.Lon > 0.001 {
			t.Errorf("bed %d at %v, origin %v", bi, b.Geolocation, ds.Origin)
		}
		if bi > 0 && b.Geolocation.Lon <= ds.Beds[bi-1].Geolocation.Lon {
			t.Errorf("bed %d not east of bed %d", bi, bi-1)
		}
		if n := len(b.Transforms); n < 2 || n > 4 {
			t.Errorf("bed %d: %d transforms", bi, n)
		}
		for f, tf := range b.Transforms {
			if tf.Rotation == [4]float64{0, 0, 0, 1} || tf.Translation == [3]float64{} {
				t.Errorf("bed %d frame %s: trivial transform %+v", bi, f, tf)
			}
		}
		if len(b.Plants) != 33 {
			t.Errorf("bed %d: %d plants", bi, len(b.Plants))
		}
		species := map[string]bool{}
		for _, c := range b.Classes {
			uuid(c.UUID)
			if v, ok := c.Attributes["variety"].(string); !ok || v == "" {
				t.Errorf("class %s without variety", c.UUID)
			}
		}
		for _, in := range b.Instances {
			uuid(in.UUID)
			species[in.Name] = true
			if _, ok := b.Classes[in.ClassUUID]; !ok {
				t.Errorf("instance %s of unknown class", in.UUID)
			}
		}
		if len(species) > 1 {
			stats.mixedBeds++
		}
		for _, p := range b.Plants {
			uuid(p.MeasurementUUID)
			m := b.Measurements[p.MeasurementUUID]
			if h, ok := m["humidity"].(float64); ok && (h < 0 || h > 1) {
				t.Errorf("humidity %v", h)
			}
			switch g, ok := m["growth_state"].(float64); {
			case !ok:
				stats.noGrowth++
			case g >= 1:
				stats.ripe++
			}
			for _, k := range []string{"health_0_level", "health_1_level", "health_2_level"} {
				if l, ok := m[k].(int64); ok && (l < 0 || l > 5) {
					t.Errorf("%s = %d", k, l)
				}
			}
			if p.CloudUUID == "" {
				stats.noCloud++
				continue
			}
			uuid(p.CloudUUID)
			c := b.Clouds[p.CloudUUID]
			if c.FrameID == demo.FrameMap {
				stats.inMap++
			}
			switch {
			case c.BigEndian:
				stats.bigEndian++
			case c.Fields[0].Datatype == cloud.Float64:
				stats.float64s++
			}
			if c.Height > 1 {
				stats.organised++
			}
			if n := int(c.Width * c.Height); n < 296 || n > 3000 {
				t.Errorf("%s: %d points", p.Name, n)
			}
			if c.Points < int(c.Width*c.Height) {
				stats.withNaN++
			}
			checkCloud(t, p.Name, c)
			// The plant is drawn inside its bed (tilted frames move it a little).
			if p.HasPosition && (p.MapPosition[0] < -0.5 || p.MapPosition[0] > b.Size[0]+0.5 ||
				p.MapPosition[1] < -0.5 || p.MapPosition[1] > b.Size[1]+0.5) {
				t.Errorf("bed %d %s at %v, outside %v", bi, p.Name, p.MapPosition, b.Size)
			}
		}
	}
	t.Logf("%+v", stats)
	if stats.noCloud == 0 || stats.inMap == 0 || stats.bigEndian == 0 || stats.float64s == 0 ||
		stats.organised == 0 || stats.withNaN == 0 || stats.ripe == 0 || stats.noGrowth == 0 || stats.mixedBeds == 0 {
		t.Errorf("the dataset lacks a case: %+v", stats)
	}
}

// checkCloud decodes x and y of every point on its own and compares with Centre, and
// checks the padding: point_step larger than the fields need.
func checkCloud(t *testing.T, name string, c demo.Cloud) {
	t.Helper()
	var order binary.ByteOrder = binary.LittleEndian
	if c.BigEndian {
		order = binary.BigEndian
	}
	packed := uint32(0)
	for _, f := range c.Fields {
		packed += f.Datatype.Size() * max(f.Count, 1)
	}
	if c.PointStep <= packed {
		t.Errorf("%s: point_step %d not padded (fields need %d)", name, c.PointStep, packed)
	}
	read := func(p []byte, f cloud.Field) float64 {
		if f.Datatype == cloud.Float64 {
			return math.Float64frombits(order.Uint64(p[f.Offset:]))
		}
		return float64(math.Float32frombits(order.Uint32(p[f.Offset:])))
	}
	var sx, sy float64
	n := 0
	for r := uint32(0); r < c.Height; r++ {
		for i := uint32(0); i < c.Width; i++ {
			p := c.Data[r*c.RowStep+i*c.PointStep:]
			x, y := read(p, c.Fields[0]), read(p, c.Fields[1])
			if math.IsNaN(x) || math.IsNaN(y) {
				continue
			}
			sx, sy, n = sx+x, sy+y, n+1
		}
	}
	if n != c.Points || math.Abs(sx/float64(n)-c.Centre[0]) > 1e-9 || math.Abs(sy/float64(n)-c.Centre[1]) > 1e-9 {
		t.Errorf("%s: decoded %d points centre (%v, %v), dataset says %d (%v)", name, n, sx/float64(n), sy/float64(n), c.Points, c.Centre)
	}
}

func TestWantBed(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 1, Beds: 1})
	if _, ok := ds.WantBed("nope"); ok {
		t.Error("unknown project found")
	}
	b, ok := ds.WantBed(ds.Beds[0].ProjectUUID)
	if !ok || len(b.Plants) != 33 || b.Plants[0].Name != "plant_001" || b.Plants[32].Name != "plant_033" {
		t.Fatalf("bed %+v", b)
	}
	if p := b.Plants[5]; p.Humidity == nil || *p.Humidity != 0 {
		t.Errorf("plant_006 humidity %v, want 0 from an int64", p.Humidity)
	}
}
