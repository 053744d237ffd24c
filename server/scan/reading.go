// Package scan keeps what gardend learns each time it reads a bed from the spatial
// server: Reading turns a read into a store.BedReading, a Recorder hands it to the
// store (which keeps each new measurement once and evaluates the alerts), and a
// Reader reads every registered bed on a schedule, on one node of a cluster at a
// time, so history grows even when nobody looks.
package scan

import (
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// Reading turns a read of a bed (its plants carrying the ids gardend keeps for
// them) into what the store records: each plant's values as of its measurement's
// stamp, and the bed's summary, as the beds stream computes it, as of the newest.
func Reading(b store.Bed, name string, bed spatial.Bed, read time.Time) store.BedReading {
	plants := make([]store.PlantReading, 0, len(bed.Plants))
	seen := make(map[string]bool, len(bed.Plants))
	for _, p := range bed.Plants {
		// A plant without an id it can be kept under (none, too long, or one another
		// plant of the bed has) has no history; the others still do.
		if p.ID == "" || len(p.ID) > maxPlantID || seen[p.ID] {
			continue
		}
		seen[p.ID] = true
		pr := store.PlantReading{ID: p.ID, Measurement: p.Measurement, Stamp: p.MeasuredAt, Species: p.Species}
		pr.Values = values(spatial.PlantSummary(p, pr.At(read)))
		plants = append(plants, pr)
	}
	at := store.BedReadingAt(plants, read)
	sum := spatial.Summarize(bed.Plants, at)
	r := store.BedReading{Bed: b.ID, Name: name, Read: store.HistoryTime(read), At: at, Species: sum.Species,
		Summary: values(sum), Plants: plants}
	r.Summary.Plants = new(int64(len(bed.Plants)))
	return r
}

// maxPlantID is the longest plant id history keeps (store.ValidateReading).
const maxPlantID = 128

func values(sum spatial.Summary) store.HistoryValues {
	v := store.HistoryValues{SoilHumidity: sum.SoilHumidity, Yield: sum.Yield}
	if sum.HarvestWeeks != nil {
		v.HarvestWeeks = new(int64(*sum.HarvestWeeks))
	}
	for _, h := range sum.Health {
		v.Health = append(v.Health, store.HealthLevel{Type: h.Type, Level: h.Level})
	}
	return v
}
