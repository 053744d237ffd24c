package server_test

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// What the beds and plants endpoints must answer, worked out here from the demo
// dataset's raw values by the rules of decisions.md ("Beds and plants"), without the
// server's averaging code (spatial.Summarize). demo.WantBed reads the raw values per
// plant; spatial.PlantPosition is the position rule the spec names.

type expected struct {
	plant, variety  string
	humidity, yield *float64
	harvest         *string
	health          []health
}

func expectSummary(plants []spatial.Plant, now time.Time) expected {
	var e expected
	e.plant = modeOf(plants, func(p spatial.Plant) string { return p.Species })
	e.variety = modeOf(plants, func(p spatial.Plant) string { return p.Variety })
	e.humidity = meanOf(plants, func(p spatial.Plant) *float64 { return p.Humidity })
	e.yield = meanOf(plants, func(p spatial.Plant) *float64 { return p.Yield })
	var remain []float64
	for _, p := range plants {
		if p.GrowthState == nil || !(*p.GrowthState > 0) {
			continue
		}
		g := *p.GrowthState
		if g >= 1 {
			remain = append(remain, 0)
			continue
		}
		if p.PlantedAt == nil || now.Before(*p.PlantedAt) {
			continue
		}
		remain = append(remain, math.Round(float64(now.Sub(*p.PlantedAt))*(1-g)/g))
	}
	if len(remain) > 0 {
		sum := 0.0
		for _, r := range remain {
			sum += r
		}
		text := fmt.Sprintf("%d week", int(math.Round(sum/float64(len(remain))/float64(7*24*time.Hour))))
		e.harvest = &text
	}
	levels := map[string][]int64{}
	for _, p := range plants {
		for _, h := range p.Health {
			levels[h.Type] = append(levels[h.Type], h.Level)
		}
	}
	for typ, ls := range levels {
		sum := 0.0
		for _, l := range ls {
			sum += float64(l)
		}
		e.health = append(e.health, health{Type: typ, Loglevel: int64(math.Round(sum / float64(len(ls))))})
	}
	rank := map[string]int{"water": 0, "nutrients": 1, "diseases": 2}
	slices.SortFunc(e.health, func(a, b health) int {
		ra, oka := rank[a.Type]
		rb, okb := rank[b.Type]
		if !oka {
			ra = 3
		}
		if !okb {
			rb = 3
		}
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(a.Type, b.Type))
	})
	return e
}

func modeOf(plants []spatial.Plant, key func(spatial.Plant) string) string {
	counts := map[string]int{}
	for _, p := range plants {
		if k := key(p); k != "" {
			counts[k]++
		}
	}
	best := ""
	for k, n := range counts {
		if best == "" || n > counts[best] || n == counts[best] && k < best {
			best = k
		}
	}
	return best
}

func meanOf(plants []spatial.Plant, val func(spatial.Plant) *float64) *float64 {
	sum, n := 0.0, 0
	for _, p := range plants {
		if v := val(p); v != nil {
			sum += *v
			n++
		}
	}
	if n == 0 {
		return nil
	}
	m := sum / float64(n)
	return &m
}

// expectPositions is each plant's position by name order; false where none is known.
func expectPositions(tb testing.TB, ds *demo.Dataset, project string) ([]spatial.Plant, []*latLon) {
	tb.Helper()
	want, ok := ds.WantBed(project)
	if !ok {
		tb.Fatalf("no bed %s in the dataset", project)
	}
	bed := ds.Bed(project)
	out := make([]*latLon, len(want.Plants))
	for i, p := range want.Plants {
		if p.Cloud == nil {
			continue
		}
		ll, err := spatial.PlantPosition(bed.Clouds[p.Cloud.UUID].PointCloud, p.Cloud.FrameID, p.Cloud.Transform, bed.Geolocation)
		if err != nil {
			continue
		}
		out[i] = &latLon{Lat: ll.Lat, Lon: ll.Lon}
	}
	return want.Plants, out
}

func checkFloat(tb testing.TB, what string, got, want *float64) {
	tb.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		tb.Errorf("%s: got %v, want %v", what, ptrText(got), ptrText(want))
	case math.Abs(*got-*want) > 1e-12:
		tb.Errorf("%s: got %v, want %v", what, *got, *want)
	}
}

func ptrText[T any](p *T) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}

func checkSummary(tb testing.TB, what string, e expected, plant, variety string, humidity, yield *float64, harvest *string, h []health) {
	tb.Helper()
	if plant != e.plant || variety != e.variety {
		tb.Errorf("%s: plant %q variety %q, want %q %q", what, plant, variety, e.plant, e.variety)
	}
	checkFloat(tb, what+" soil_humidty", humidity, e.humidity)
	checkFloat(tb, what+" yield", yield, e.yield)
	if ptrText(harvest) != ptrText(e.harvest) {
		tb.Errorf("%s: harvest %s, want %s", what, ptrText(harvest), ptrText(e.harvest))
	}
	if !slices.Equal(h, e.health) {
		tb.Errorf("%s: health %v, want %v", what, h, e.health)
	}
}

func checkCoords(tb testing.TB, what string, got, want []latLon) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%s: %d coordinates, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i].Lat-want[i].Lat) > 1e-12 || math.Abs(got[i].Lon-want[i].Lon) > 1e-12 {
			tb.Errorf("%s: coordinate %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}
