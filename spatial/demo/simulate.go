package demo

import (
	"context"
	"hash/fnv"
	"maps"
	"math"
	"strconv"
	"time"
)

// A Simulation is a robot scanning the generated garden over time: a scan at t
// updates every plant's measurement in place (the same geometry uuid, stamp t) with
// the values the plant has at t, and its instance's planting date. Every value is a
// function of the dataset and t alone, so a scan is the same whenever and wherever it
// is computed (history seeded for the past matches what the robot reports later).
//
// What happens, per bed: it is watered every 3 to 5.5 days (soil humidity jumps to
// about 0.7 and dries towards 0.2), and once a month a bed that misses one watering
// dries below 0.25; it is fed every 18 to 30 days (nutrient levels creep up in
// between); plants grow to ripeness and are replanted. Each bed's plant in trouble
// (Plant.Trouble) goes through a problem once a month for about twelve days — drying
// out, a disease or a lack of nutrients, worsening and then getting better — at
// phases spread over the beds, so a garden of six beds always has one under way.
// Levels of other plants stay within 0–3.
type Simulation struct {
	base *Dataset
}

// DefaultScanInterval is how often the demo's robot scans the garden.
const DefaultScanInterval = 10 * time.Minute

// NewSimulation simulates ds, which it keeps as the state before any scan; ds must
// not change afterwards.
func NewSimulation(ds *Dataset) *Simulation { return &Simulation{base: ds} }

// hash01 maps its parts to a number in [0, 1), the same on every run.
func hash01(parts ...string) float64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return float64(h.Sum64()>>11) / (1 << 53)
}

// Durations of the simulation, in hours.
const (
	storyCycle    = 30 * 24.0 // a bed's missed watering and its trouble plant's problem recur
	troubleLength = 12 * 24.0
	wetHumidity   = 0.72
	dryHumidity   = 0.18
)

func hours(t time.Time) float64 { return float64(t.Unix()) / 3600 }

// wateringPeriod and wateringPhase place a bed's waterings at phase + k·period hours.
func wateringPeriod(project string) float64 { return 72 + 60*hash01(project, "water-period") }

func missesWatering(project string) bool { return hash01(project, "missed") < 0.5 }

// skipped reports whether the bed misses the watering at w (hours): once per story
// cycle, at a phase of its own.
func skipped(project string, w, period float64) bool {
	if !missesWatering(project) {
		return false
	}
	at := storyCycle * hash01(project, "missed-at")
	pos := math.Mod(w, storyCycle)
	return pos >= at && pos < at+period
}

// lastWatering is the bed's last watering at or before h (hours).
func lastWatering(project string, h float64) float64 {
	period := wateringPeriod(project)
	phase := period * hash01(project, "water-phase")
	w := phase + math.Floor((h-phase)/period)*period
	for skipped(project, w, period) {
		w -= period
	}
	return w
}

// Waterings lists when the bed was watered in [from, to).
func (s *Simulation) Waterings(project string, from, to time.Time) []time.Time {
	var out []time.Time
	period := wateringPeriod(project)
	phase := period * hash01(project, "water-phase")
	for w := phase + math.Ceil((hours(from)-phase)/period)*period; w < hours(to); w += period {
		if !skipped(project, w, period) {
			out = append(out, time.Unix(int64(math.Round(w*3600)), 0).UTC())
		}
	}
	return out
}

// bedHumidity is the soil humidity of the bed's soil at h, before each plant's own
// offset.
func bedHumidity(project string, h float64) float64 {
	since := h - lastWatering(project, h)
	tau := wateringPeriod(project) / 1.6
	return dryHumidity + (wetHumidity-dryHumidity)*math.Exp(-since/tau)
}

// troubleIntensity is how bad the trouble plant's problem is at h, 0 to 1: rising and
// falling over troubleLength hours once per story cycle, at a phase spread over the
// beds by index.
func troubleIntensity(bedIndex, beds int, project string, h float64) float64 {
	start := storyCycle*float64(bedIndex)/float64(max(beds, 1)) + 24*hash01(project, "trouble-at")
	u := math.Mod(h-start, storyCycle)
	if u < 0 {
		u += storyCycle
	}
	if u >= troubleLength {
		return 0
	}
	return math.Sin(math.Pi * u / troubleLength)
}

// Trouble kinds.
const (
	troubleDry = iota
	troubleDisease
	troubleHunger
)

func troubleKind(bedIndex int) int { return bedIndex % 3 }

// cropDays is how long a crop takes from planting to ripe.
func cropDays(species string) float64 {
	switch species {
	case "tomato":
		return 100
	case "lettuce":
		return 50
	case "kohlrabi":
		return 60
	}
	return 65
}

func round(v float64, decimals int) float64 {
	p := math.Pow10(decimals)
	return math.Round(v*p) / p
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

// Scan returns every bed as a scan at t leaves it.
func (s *Simulation) Scan(t time.Time) []Bed {
	out := make([]Bed, len(s.base.Beds))
	for i := range s.base.Beds {
		out[i] = s.scanBed(i, t)
	}
	return out
}

// ScanBed returns the bed of the project as a scan at t leaves it; ok is false for an
// unknown project.
func (s *Simulation) ScanBed(project string, t time.Time) (Bed, bool) {
	for i := range s.base.Beds {
		if s.base.Beds[i].ProjectUUID == project {
			return s.scanBed(i, t), true
		}
	}
	return Bed{}, false
}

// ScanDataset is a dataset holding every bed as a scan at t leaves it (for WantBed).
func (s *Simulation) ScanDataset(t time.Time) *Dataset {
	return &Dataset{Origin: s.base.Origin, Now: t, Beds: s.Scan(t)}
}

func (s *Simulation) scanBed(index int, t time.Time) Bed {
	base := s.base.Beds[index]
	b := base
	t = t.UTC().Truncate(time.Second)
	h := hours(t)
	b.Geometries = make([]Geometry, len(base.Geometries))
	for i, g := range base.Geometries {
		if g.Type == TypeMeasurement {
			g.Stamp = t
		}
		b.Geometries[i] = g
	}
	b.Measurements = make(map[string]map[string]any, len(base.Measurements))
	b.Instances = maps.Clone(base.Instances)
	for _, p := range base.Plants {
		m := maps.Clone(base.Measurements[p.MeasurementUUID])
		species := ""
		in, hasInstance := base.Instances[p.InstanceUUID]
		if hasInstance {
			species = in.Name
		}
		age := s.plant(index, len(s.base.Beds), base.ProjectUUID, p, species, h, m)
		if _, ok := in.Attributes["planting_date"].(int64); hasInstance && ok {
			in.Attributes = maps.Clone(in.Attributes)
			in.Attributes["planting_date"] = t.Add(-time.Duration(age * float64(time.Hour))).Unix()
			b.Instances[p.InstanceUUID] = in
		}
		b.Measurements[p.MeasurementUUID] = m
	}
	return b
}

// plant writes a plant's values at h into m, changing only values of the types the
// generator gave them (the deliberate oddities stay as they are), and returns the
// crop's age in hours.
func (s *Simulation) plant(bedIndex, beds int, project string, p Plant, species string, h float64, m map[string]any) float64 {
	id := p.MeasurementUUID
	hourIndex := strconv.FormatInt(int64(math.Floor(h)), 10)
	weekIndex := strconv.FormatInt(int64(math.Floor(h/(7*24))), 10)

	trouble := 0.0
	if p.Trouble {
		trouble = troubleIntensity(bedIndex, beds, project, h)
	}
	kind := troubleKind(bedIndex)

	humidity := bedHumidity(project, h) + 0.08*(hash01(id, "offset")-0.5) + 0.03*(hash01(id, "noise", hourIndex)-0.5)
	if kind == troubleDry {
		humidity *= 1 - 0.65*trouble
	}
	humidity = round(clamp(humidity, 0.02, 0.95), 3)
	if _, ok := m["humidity"].(float64); ok {
		m["humidity"] = humidity
	}

	maxLevel := float64(maxNormalLevel)
	if p.Trouble {
		maxLevel = 5
	}
	feedPeriod := (18 + 12*hash01(project, "feed-period")) * 24
	feedPhase := feedPeriod * hash01(project, "feed-phase")
	sinceFed := math.Mod(h-feedPhase, feedPeriod)
	if sinceFed < 0 {
		sinceFed += feedPeriod
	}
	x := sinceFed / feedPeriod
	levels := map[string]float64{
		"water":     clamp(math.Round((0.5-humidity)/0.09), 0, maxLevel),
		"nutrients": clamp(math.Round(2.3*x*x+hash01(id, "need")-0.75), 0, maxNormalLevel),
		"diseases":  0,
	}
	if hash01(id, "sick", weekIndex) < 0.12 {
		levels["diseases"] = 1
	}
	switch {
	case kind == troubleDisease && trouble > 0:
		levels["diseases"] = math.Max(levels["diseases"], math.Round(4.4*trouble))
	case kind == troubleHunger && trouble > 0:
		levels["nutrients"] = math.Max(levels["nutrients"], math.Round(4.4*trouble))
	}
	for i := range 3 {
		typ, _ := m[healthKey(i, "type")].(string)
		if _, whole := m[healthKey(i, "level")].(int64); whole {
			if l, known := levels[typ]; known {
				m[healthKey(i, "level")] = int64(l)
			}
		}
	}

	days := cropDays(species)
	age := math.Mod(h/24+days*hash01(id, "sown"), days) * 24
	growth := math.Min(1.05, age/24/(0.95*days))
	if _, ok := m["growth_state"].(float64); ok {
		m["growth_state"] = round(growth, 3)
		if y0, ok := m["approx_yield"].(float64); ok {
			m["approx_yield"] = round(y0*(0.3+0.7*math.Min(growth, 1)), 2)
		}
		if st, ok := m["status"].(string); ok && st != "" {
			switch {
			case growth >= 1:
				m["status"] = "ripe"
			case growth > 0.6:
				m["status"] = "flowering"
			default:
				m["status"] = "vegetating"
			}
		}
	}
	return age
}

// RunRobot scans the garden every interval until ctx ends, the first time at once:
// each scan replaces the server's beds (SetBed) with the simulation's state at now().
func (s *Server) RunRobot(ctx context.Context, sim *Simulation, interval time.Duration, now func() time.Time) {
	scan := func() {
		for _, b := range sim.Scan(now()) {
			s.SetBed(b)
		}
	}
	scan()
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			scan()
		}
	}
}
