package scan

import (
	"fmt"
	"testing"
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// TestScheduleSpread: 500 beds are spread over the interval (no minute of an hour
// holds more than a few times its share), each at the same offset in every interval
// and on every node, due at or after now.
func TestScheduleSpread(t *testing.T) {
	const interval = time.Hour
	now := time.Date(2026, 11, 22, 8, 17, 3, 0, time.UTC)
	perMinute := map[int]int{}
	for i := range 500 {
		b := store.Bed{ID: uint64(i + 1), UUID: fmt.Sprintf("3fa85f64-5717-4562-b3fc-%012d", i)}
		at := due(b, interval, now)
		if at.Before(now) || !at.Before(now.Add(interval)) {
			t.Fatalf("bed %d due at %v, now %v", b.ID, at, now)
		}
		if again := due(b, interval, now.Add(interval)); !again.Equal(at.Add(interval)) {
			t.Fatalf("bed %d: next interval at %v, want %v", b.ID, again, at.Add(interval))
		}
		if same := due(b, interval, at); !same.Equal(at) {
			t.Fatalf("bed %d due at its own time moves to %v", b.ID, same)
		}
		perMinute[int(offset(b, interval)/time.Minute)]++
	}
	for m, n := range perMinute {
		if n > 3*500/60 {
			t.Errorf("minute %d holds %d of 500 beds", m, n)
		}
	}
	if len(perMinute) < 55 {
		t.Errorf("beds fall in only %d minutes of the hour", len(perMinute))
	}
}

// TestReading: a read becomes a reading: each plant dated by its stamp (when read
// without one), the bed by the newest, its summary as the stream's with the plant
// count; plants without a usable id are left out, the rest kept.
func TestReading(t *testing.T) {
	read := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	stamp := read.Add(-2 * time.Hour)
	h1, h2 := 0.25, 0.75
	planted := read.Add(-30 * 24 * time.Hour)
	g := 0.5
	bed := spatial.Bed{Plants: []spatial.Plant{
		{Name: "a", ID: "id-a", Measurement: "m-a", MeasuredAt: stamp, Species: "tomato", Humidity: &h1, GrowthState: &g, PlantedAt: &planted,
			Health: []spatial.Health{{Type: "water", Level: 3}}},
		{Name: "b", ID: "id-b", Measurement: "m-b", Species: "tomato", Humidity: &h2, Health: []spatial.Health{{Type: "water", Level: 1}}},
		{Name: "c", ID: "id-b", Measurement: "m-c"}, // an id another plant has
		{Name: "d", ID: "", Measurement: "m-d"},
	}}
	r := Reading(store.Bed{ID: 7}, "Bed 7", bed, read)
	if err := store.ValidateReading(r); err != nil {
		t.Fatal(err)
	}
	if r.Bed != 7 || r.Name != "Bed 7" || r.Species != "tomato" || len(r.Plants) != 2 || !r.At.Equal(read) {
		t.Fatalf("reading %+v", r)
	}
	a := r.Plants[0]
	if !a.At(read).Equal(stamp) || *a.Values.SoilHumidity != 0.25 || *a.Values.HarvestWeeks != 4 || a.Values.Health[0].Level != 3 {
		t.Errorf("plant a %+v", a)
	}
	if s := r.Summary; *s.SoilHumidity != 0.5 || *s.Plants != 4 || s.Health[0] != (store.HealthLevel{Type: "water", Level: 2}) {
		t.Errorf("summary %+v", s)
	}
}
