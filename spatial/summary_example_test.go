package spatial_test

import (
	"fmt"
	"time"

	"github.com/gardend/gardend/spatial"
)

func ExampleSummarize() {
	g := func(v float64) *float64 { return &v }
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	planted := now.AddDate(0, 0, -56) // eight weeks ago
	plants := []spatial.Plant{
		{Species: "mangold", Humidity: g(0.25), GrowthState: g(0.8), PlantedAt: &planted,
			Health: []spatial.Health{{Type: "diseases", Level: 1}, {Type: "water", Level: 2}}},
		{Species: "mangold", Humidity: g(0.35), GrowthState: g(1),
			Health: []spatial.Health{{Type: "water", Level: 3}}},
	}
	s := spatial.Summarize(plants, now)
	fmt.Println(s.Species, *s.SoilHumidity, spatial.HarvestText(*s.HarvestWeeks), s.Health, s.Yield == nil)
	// Output: mangold 0.3 1 week [{water 3} {diseases 1}] true
}
