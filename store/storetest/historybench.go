package storetest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// HistoryFixture is a garden whose beds have history, for benchmarks.
type HistoryFixture struct {
	Garden store.Garden
	Beds   []store.Bed
	// Plants are the plant ids of every bed; Points counts the points kept (plants'
	// and beds').
	Plants []string
	Points int
	// From and To bound the points' times.
	From, To time.Time
}

// FillHistory gives a new garden beds × plants plants and their history: a scan
// every step over span up to the store's now, each plant's humidity, yield and three
// health levels in thousandths and whole levels as a robot reports them, recorded
// through RecordReadings batch readings at a time. Levels change daily (water) and
// weekly (nutrients), so each plant raises an alert every few days: with a level
// changing every hour the alerts it raised and closed (470,000 in two years, about
// 1.3 KB each on bbolt) took 85% of the two-year store's file.
func FillHistory(tb testing.TB, st store.Backend, beds, plants int, span, step time.Duration, batch int) HistoryFixture {
	tb.Helper()
	u := mustUser(tb, st, fmt.Sprintf("bench%d", time.Now().UnixNano()%1e6))
	g := mustGarden(tb, st, mustCompany(tb, st, u, "Bench"), "Bench garden")
	f := HistoryFixture{Garden: g, To: st.Now().Truncate(step)}
	f.From = f.To.Add(-span)
	for i := range beds {
		b, err := st.CreateBed(g.ID, fmt.Sprintf("3fa85f64-5717-4562-b3fc-%012d", i), fmt.Sprintf("Bed %d", i+1))
		if err != nil {
			tb.Fatal(err)
		}
		f.Beds = append(f.Beds, b)
	}
	for p := range plants {
		f.Plants = append(f.Plants, fmt.Sprintf("c56a4180-65aa-42ec-a945-%012d", p))
	}
	var rs []store.BedReading
	flush := func() {
		rec, err := st.RecordReadings(rs)
		if err != nil {
			tb.Fatal(err)
		}
		f.Points += rec.Plants
		if rec.Bed {
			f.Points += len(rs)
		}
		rs = rs[:0]
	}
	milli := func(v float64) *float64 { v = math.Round(v*1000) / 1000; return &v }
	for t, k := f.From, 0; t.Before(f.To); t, k = t.Add(step), k+1 {
		for _, b := range f.Beds {
			r := store.BedReading{Bed: b.ID, Name: b.Name, Read: t, At: t, Species: "tomato"}
			for p, id := range f.Plants {
				x := float64(k*7+p*13) / 97
				v := store.HistoryValues{SoilHumidity: milli(0.45 + 0.3*math.Sin(x)), Yield: milli(1 + 0.5*math.Cos(x/3)),
					HarvestWeeks: new(int64(8 - (k/168)%9)),
					Health:       []store.HealthLevel{{Type: "water", Level: int64(k/24+p) % 4}, {Type: "nutrients", Level: int64(k/168+p) % 4}, {Type: "diseases", Level: int64(p % 2)}}}
				r.Plants = append(r.Plants, store.PlantReading{ID: id, Measurement: "m-" + id, Stamp: t, Species: "tomato", Values: v})
			}
			r.Summary = store.HistoryValues{SoilHumidity: milli(0.5), Yield: milli(1.1), Plants: new(int64(plants)),
				Health: []store.HealthLevel{{Type: "water", Level: 1}, {Type: "nutrients", Level: 1}, {Type: "diseases", Level: 0}}}
			rs = append(rs, r)
		}
		if len(rs) >= batch {
			flush()
		}
	}
	if len(rs) > 0 {
		flush()
	}
	return f
}
