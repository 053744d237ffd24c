package spatial

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func f64(v float64) *float64 { return &v }

func weeksAgo(w float64) *time.Time {
	t := now.Add(-time.Duration(w * float64(week)))
	return &t
}

// growing is a plant planted w weeks ago at growth state g.
func growing(w, g float64) Plant { return Plant{PlantedAt: weeksAgo(w), GrowthState: f64(g)} }

func TestRemainingToHarvest(t *testing.T) {
	cases := []struct {
		name   string
		p      Plant
		want   time.Duration
		wantOK bool
	}{
		{"half grown after 10 weeks", growing(10, 0.5), 10 * week, true},
		{"80% after 8 weeks", growing(8, 0.8), 2 * week, true},
		{"just planted", growing(0, 0.3), 0, true},
		{"ripe", growing(5, 1), 0, true},
		{"over-ripe", growing(5, 1.7), 0, true},
		{"ripe without planting date", Plant{GrowthState: f64(1)}, 0, true},
		{"ripe, planted in the future", Plant{GrowthState: f64(1), PlantedAt: weeksAgo(-1)}, 0, true},
		{"+Inf growth is ripe", growing(5, math.Inf(1)), 0, true},
		{"growth 0", growing(5, 0), 0, false},
		{"negative growth", growing(5, -0.2), 0, false},
		{"NaN growth", growing(5, math.NaN()), 0, false},
		{"missing growth", Plant{PlantedAt: weeksAgo(3)}, 0, false},
		{"missing planting date", Plant{GrowthState: f64(0.5)}, 0, false},
		{"planted in the future", growing(-2, 0.5), 0, false},
		{"tiny growth clamps", growing(5200, 1e-300), time.Duration(math.MaxInt64), true},
	}
	for _, c := range cases {
		got, ok := RemainingToHarvest(c.p, now)
		if got != c.want || ok != c.wantOK {
			t.Errorf("%s: got %v, %v, want %v, %v", c.name, got, ok, c.want, c.wantOK)
		}
	}
}

func TestWeeksAndText(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want int
	}{
		{0, 0}, {week, 1}, {3 * week, 3},
		{week / 2, 1}, {week/2 - 1, 0}, // halves round up
		{5 * week / 2, 3}, {7 * week / 2, 4}, // not to even
		{-week / 2, -1},
		{time.Duration(math.MaxInt64), 15250},
	}
	for _, c := range cases {
		if got := Weeks(c.d); got != c.want {
			t.Errorf("Weeks(%v) = %d, want %d", c.d, got, c.want)
		}
	}
	for w, want := range map[int]string{0: "0 week", 1: "1 week", 3: "3 week", 12: "12 week"} {
		if got := HarvestText(w); got != want {
			t.Errorf("HarvestText(%d) = %q, want %q", w, got, want)
		}
	}
}

func intp(v int) *int { return &v }

func TestSummarize(t *testing.T) {
	cases := []struct {
		name   string
		plants []Plant
		want   Summary
	}{
		{"no plants", nil, Summary{}},
		{"plants without data", []Plant{{}, {}}, Summary{}},
		{
			name: "species and variety: most frequent, ties to the first sorted, empty ignored",
			plants: []Plant{
				{Species: "mangold", Variety: "Lucullus"}, {Species: "kale", Variety: ""},
				{Species: "mangold", Variety: "Rhubarb"}, {Species: "kale", Variety: "Rhubarb"},
				{Species: "", Variety: "Lucullus"}, {Species: "", Variety: ""}, {Species: "", Variety: ""},
			},
			want: Summary{Species: "kale", Variety: "Lucullus"},
		},
		{
			name:   "a clear majority beats sort order",
			plants: []Plant{{Species: "b"}, {Species: "b"}, {Species: "a"}},
			want:   Summary{Species: "b"},
		},
		{
			name: "means over the plants that have the value",
			plants: []Plant{
				{Humidity: f64(0.2), Yield: f64(3)}, {Humidity: f64(0.4)}, {Humidity: nil, Yield: f64(5)},
				{Humidity: f64(math.NaN()), Yield: f64(math.Inf(1))}, // not values
			},
			want: Summary{SoilHumidity: f64(0.30000000000000004), Yield: f64(4)},
		},
		{
			name:   "humidity present, yield absent",
			plants: []Plant{{Humidity: f64(0.5)}},
			want:   Summary{SoilHumidity: f64(0.5)},
		},
		{
			name: "harvest: mean of contributing plants",
			plants: []Plant{
				growing(10, 0.5), // 10 weeks
				growing(8, 0.8),  // 2 weeks
				growing(3, 1),    // ripe: 0
				growing(3, 0),    // left out
				{GrowthState: f64(0.5)},
				growing(-1, 0.5), // planted in the future: left out
			},
			want: Summary{HarvestWeeks: intp(4)},
		},
		{
			// Rounding each plant first would give (0+0+1)/3 → 0 weeks.
			name:   "harvest: average first, round after",
			plants: []Plant{growing(0.45, 0.5), growing(0.45, 0.5), growing(1.45, 0.5)},
			want:   Summary{HarvestWeeks: intp(1)},
		},
		{
			name:   "harvest: half a week rounds up",
			plants: []Plant{growing(1, 0.5), growing(2, 0.5)},
			want:   Summary{HarvestWeeks: intp(2)},
		},
		{
			name:   "harvest: only ripe plants give 0 weeks, not absent",
			plants: []Plant{growing(1, 1)},
			want:   Summary{HarvestWeeks: intp(0)},
		},
		{
			name: "health: mean per type, rounded, known types first then by name",
			plants: []Plant{
				{Health: []Health{{"pests", 1}, {"diseases", 2}, {"water", 1}}},
				{Health: []Health{{"water", 2}, {"aphids", 4}, {"nutrients", -1}}},
				{Health: []Health{{"diseases", 3}, {"nutrients", -2}, {"", 9}}},
				{Health: []Health{{"pests", 1}, {"pests", 2}}},
			},
			want: Summary{Health: []Health{
				{"water", 2},      // 1.5 → 2
				{"nutrients", -2}, // −1.5 → −2 (away from zero)
				{"diseases", 3},   // 2.5 → 3
				{"aphids", 4},
				{"pests", 1}, // 4/3 → 1
			}},
		},
	}
	for _, c := range cases {
		if got := Summarize(c.plants, now); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, show(got), show(c.want))
		}
	}
}

func TestPlantSummary(t *testing.T) {
	p := Plant{
		Species: "mangold", Variety: "Lucullus", Humidity: f64(0.31), Yield: nil,
		GrowthState: f64(0.75), PlantedAt: weeksAgo(9),
		Health: []Health{{"diseases", 1}, {"ladybirds", 0}, {"water", 3}, {"nutrients", 2}},
	}
	want := Summary{
		Species: "mangold", Variety: "Lucullus", SoilHumidity: f64(0.31), HarvestWeeks: intp(3),
		Health: []Health{{"water", 3}, {"nutrients", 2}, {"diseases", 1}, {"ladybirds", 0}},
	}
	if got := PlantSummary(p, now); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %s\nwant %s", show(got), show(want))
	}
	if got := PlantSummary(Plant{Name: "bare"}, now); !reflect.DeepEqual(got, Summary{}) {
		t.Fatalf("bare plant: got %s", show(got))
	}
}

// show prints a Summary with its pointers followed.
func show(s Summary) string {
	f := func(p *float64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	var w any
	if s.HarvestWeeks != nil {
		w = *s.HarvestWeeks
	}
	return fmt.Sprint(s.Species, s.Variety, f(s.SoilHumidity), f(s.Yield), w, s.Health)
}
