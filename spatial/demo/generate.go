package demo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/gardend/gardend/spatial"
)

// Defaults of Options.
const (
	DefaultBeds   = 6
	DefaultPlants = 33
)

// Options shape a generated garden. Zero values take the defaults.
type Options struct {
	Seed int64
	// Beds is the number of beds (projects). Default DefaultBeds.
	Beds int
	// Plants is the number of plants per bed. Default DefaultPlants.
	Plants int
	// Origin is where the first bed's map frame starts. Default 52.3171, 7.6306.
	Origin spatial.LatLon
	// Now is the recording instant. Default 2026-06-15 12:00 UTC: a fixed instant keeps
	// the dataset a function of Options alone.
	Now time.Time
}

func (o Options) withDefaults() Options {
	if o.Beds <= 0 {
		o.Beds = DefaultBeds
	}
	if o.Plants <= 0 {
		o.Plants = DefaultPlants
	}
	if o.Origin == (spatial.LatLon{}) {
		o.Origin = spatial.LatLon{Lat: 52.3171, Lon: 7.6306}
	}
	if o.Now.IsZero() {
		o.Now = time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	}
	return o
}

// Layout of a bed, in metres: plants in rows of three, beds side by side to the east.
const (
	plantSpacing = 0.4
	plantsPerRow = 3
	bedGap       = 2.0
)

var species = []struct {
	name      string
	varieties []string
}{
	{"mangold", []string{"Lucullus", "Bright Lights", "Rhubarb Chard"}},
	{"tomato", []string{"Moneymaker", "San Marzano", "Harzfeuer"}},
	{"lettuce", []string{"Lollo Rosso", "Butterhead"}},
	{"kohlrabi", []string{"Azur Star", "Lanro"}},
}

var frameNames = []string{"camera_front", "camera_rear", "lidar_top", "camera_side"}

// gen carries the random source through generation; every draw goes through it in a
// fixed order, so the dataset depends on Options only.
type gen struct {
	r   *rand.Rand
	now time.Time
}

func (g *gen) uuid() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := g.r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (g *gen) uniform(lo, hi float64) float64 { return lo + g.r.Float64()*(hi-lo) }
func (g *gen) chance(p float64) bool          { return g.r.Float64() < p }

// Generate builds a deterministic garden from o. Besides ordinary data it holds, on
// purpose, what a client must cope with; with the default sizes:
//   - plants without a point cloud, clouds in frame "map", a quaternion that is not
//     normalised, and in bed 1 (when there are two beds) one cloud in a frame that has
//     no transform;
//   - in bed 0: humidity sent as int64, a yield as int64, a health level as double and
//     one as uint64, a growth_state that is a string, a health type without its level,
//     a plant whose measurement geometry has no labels, one with only an instance
//     label, and an "image" geometry sharing a plant's name;
//   - clouds of float32 (padded), float64, big-endian and organised (row-padded)
//     layouts, some with NaN points.
func Generate(o Options) *Dataset {
	o = o.withDefaults()
	g := &gen{r: rand.New(rand.NewPCG(uint64(o.Seed), 0x5eed0f9a4de4)), now: o.Now}
	ds := &Dataset{Origin: o.Origin, Now: o.Now}
	rows := (o.Plants + plantsPerRow - 1) / plantsPerRow
	size := [2]float64{plantsPerRow * plantSpacing, float64(rows) * plantSpacing}
	for b := 0; b < o.Beds; b++ {
		east := float64(b) * (size[0] + bedGap)
		bed := g.bed(b, o.Plants, size)
		bed.Geolocation = offsetLatLon(o.Origin, east, 0)
		ds.Beds = append(ds.Beds, bed)
	}
	return ds
}

func (g *gen) bed(b, nPlants int, size [2]float64) Bed {
	bed := Bed{
		ProjectUUID:  g.uuid(),
		Name:         fmt.Sprintf("Bed %d", b+1),
		Altitude:     g.uniform(40, 60),
		Size:         size,
		Frames:       []string{FrameMap},
		Transforms:   map[string]spatial.Transform{},
		Measurements: map[string]map[string]any{},
		Instances:    map[string]Instance{},
		Classes:      map[string]Class{},
		Clouds:       map[string]Cloud{},
	}

	// Frames: 2–4 per bed with real rotations; one bed in two has one with a tilt and
	// a quaternion scaled away from unit length (the position code must normalise).
	nFrames := 2 + g.r.IntN(3)
	for f := 0; f < nFrames; f++ {
		name := frameNames[f]
		roll, pitch := 0.0, 0.0
		if f == 1 && b%2 == 0 {
			roll, pitch = g.uniform(-0.2, 0.2), g.uniform(-0.2, 0.2)
		}
		q := quatFromEuler(roll, pitch, g.uniform(-math.Pi, math.Pi))
		if f == 1 && b%2 == 0 {
			for i := range q {
				q[i] *= 1.5
			}
		}
		bed.Frames = append(bed.Frames, name)
		bed.Transforms[name] = spatial.Transform{
			Translation: [3]float64{g.uniform(-3, 3), g.uniform(-3, 3), g.uniform(0.5, 2)},
			Rotation:    q,
		}
	}
	orphanFrame := ""
	if b == 1 {
		orphanFrame = "drone_cam" // recorded, but the server has no transform for it
		bed.Frames = append(bed.Frames, orphanFrame)
	}

	// Species and classes: one species per bed, a second one mixed in on every third.
	sp := []int{b % len(species)}
	if b%3 == 2 {
		sp = append(sp, (b+1)%len(species))
	}
	type class struct{ uuid, species string }
	bySpecies := make([][]class, len(sp))
	for k, s := range sp {
		vs := species[s].varieties
		n := 2 + g.r.IntN(len(vs)-1) // at least two varieties of each species
		for _, v := range vs[:n] {
			c := Class{UUID: g.uuid(), Name: species[s].name + "/" + v, Attributes: map[string]any{"variety": v}}
			bed.Classes[c.UUID] = c
			bySpecies[k] = append(bySpecies[k], class{c.UUID, species[s].name})
		}
	}

	stamp := g.now.Add(-time.Duration(g.r.IntN(72*3600)) * time.Second)
	for i := 0; i < nPlants; i++ {
		name := fmt.Sprintf("plant_%03d", i+1)
		// Mostly the bed's first species; a mixed bed has the second one here and there.
		k := 0
		if len(sp) > 1 && g.chance(0.4) {
			k = 1
		}
		cl := bySpecies[k][g.r.IntN(len(bySpecies[k]))]
		inst := Instance{UUID: g.uuid(), Name: cl.species, ClassUUID: cl.uuid, Attributes: map[string]any{}}
		if !g.chance(0.05) {
			planted := g.now.Add(-time.Duration(g.uniform(25, 100)*24*3600) * time.Second)
			inst.Attributes["planting_date"] = planted.Unix()
		}
		bed.Instances[inst.UUID] = inst

		p := Plant{Name: name, MeasurementUUID: g.uuid(), InstanceUUID: inst.UUID, ClassUUID: cl.uuid}
		labels := []string{inst.UUID, cl.uuid}
		if b == 0 && i == nPlants-2 {
			labels, p.InstanceUUID, p.ClassUUID = nil, "", ""
		}
		if b == 0 && i == 7 && nPlants > 7 {
			labels, p.ClassUUID = labels[:1], ""
		}
		bed.Measurements[p.MeasurementUUID] = g.measurement(b, i)
		bed.Geometries = append(bed.Geometries, Geometry{
			Name: name, UUID: p.MeasurementUUID, Type: TypeMeasurement, FrameID: FrameMap,
			Stamp: stamp, Labels: labels,
		})

		// Where the plant stands in the map frame, before any cloud says so.
		row, col := i/plantsPerRow, i%plantsPerRow
		target := vec3{
			plantSpacing/2 + float64(col)*plantSpacing + g.uniform(-0.03, 0.03),
			plantSpacing/2 + float64(row)*plantSpacing + g.uniform(-0.03, 0.03),
			0,
		}
		if g.chance(0.12) && i != 1 && i != 2 && i != 3 {
			bed.Plants = append(bed.Plants, p)
			continue // no cloud recorded for this one
		}
		frame := FrameMap
		switch {
		case orphanFrame != "" && i == 4:
			frame = orphanFrame
		case g.chance(0.15):
			// stays in map
		default:
			frame = bed.Frames[1+g.r.IntN(nFrames)]
		}
		tf, hasTF := bed.Transforms[frame]
		if frame == FrameMap {
			tf, hasTF = spatial.Transform{Rotation: [4]float64{0, 0, 0, 1}}, true
		}
		centre := target
		if hasTF {
			centre = applyInverse(tf, target)
		}
		c := g.cloud(b, i, frame, centre)
		c.Stamp = stamp
		p.CloudUUID = g.uuid()
		bed.Clouds[p.CloudUUID] = c
		if hasTF && c.Points > 0 {
			m := apply(tf, vec3{c.Centre[0], c.Centre[1], 0})
			p.MapPosition, p.HasPosition = [2]float64{m[0], m[1]}, true
		}
		bed.Geometries = append(bed.Geometries, Geometry{
			Name: name, UUID: p.CloudUUID, Type: TypePointCloud, FrameID: frame, Stamp: stamp,
		})
		bed.Plants = append(bed.Plants, p)
	}
	markTrouble(&bed)
	// Other geometry types are ignored by clients, even under a plant's name.
	bed.Geometries = append(bed.Geometries,
		Geometry{Name: "overview", UUID: g.uuid(), Type: TypeImage, FrameID: FrameMap, Stamp: stamp},
		Geometry{Name: "plant_003", UUID: g.uuid(), Type: TypeImage, FrameID: FrameMap, Stamp: stamp},
	)
	// Servers send geometries in no particular order.
	g.r.Shuffle(len(bed.Geometries), func(i, j int) {
		bed.Geometries[i], bed.Geometries[j] = bed.Geometries[j], bed.Geometries[i]
	})
	sort.Slice(bed.Plants, func(i, j int) bool { return bed.Plants[i].Name < bed.Plants[j].Name })
	return bed
}

// measurement draws one plant's data; bed 0 carries the deliberate oddities.
func (g *gen) measurement(b, i int) map[string]any {
	d := map[string]any{}
	if g.chance(0.9) {
		d["humidity"] = g.uniform(0.15, 0.85)
	}
	if g.chance(0.85) {
		d["approx_yield"] = math.Round(g.uniform(0.2, 2.5)*100) / 100
	}
	growth, hasGrowth := 0.0, g.chance(0.88)
	if hasGrowth {
		growth = g.uniform(0.1, 0.95)
		if g.chance(0.1) {
			growth = 1 + math.Round(g.uniform(0, 0.2)*100)/100 // ripe, or past it
		}
		d["growth_state"] = growth
	}
	types := []string{"water", "nutrients", "diseases"}
	g.r.Shuffle(len(types), func(a, c int) { types[a], types[c] = types[c], types[a] })
	for h, t := range types {
		if !g.chance(0.8) {
			continue
		}
		d[fmt.Sprintf("health_%d_type", h)] = t
		if !g.chance(0.05) {
			d[fmt.Sprintf("health_%d_level", h)] = int64(g.r.IntN(6))
		}
	}
	switch {
	case g.chance(0.1):
	case hasGrowth && growth >= 1:
		d["status"] = "ripe"
	case g.chance(0.3):
		d["status"] = "flowering"
	default:
		d["status"] = "vegetating"
	}
	if b != 0 {
		return d
	}
	switch i {
	case 5:
		d["humidity"] = int64(0) // bone dry, sent as an integer
	case 9:
		d["approx_yield"] = int64(3)
	case 11:
		d["health_0_type"], d["health_0_level"] = "water", 2.0
		d["health_1_type"], d["health_1_level"] = "nutrients", uint64(4)
	case 13:
		d["growth_state"] = "unknown" // not a number: missing
	case 15:
		d["health_2_type"] = "diseases"
		delete(d, "health_2_level") // half an entry: no entry
	}
	return d
}
