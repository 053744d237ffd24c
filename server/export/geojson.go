package export

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// GeoJSON files are RFC 7946 FeatureCollections of Points in WGS84 ([longitude,
// latitude], no crs member), written a feature at a time.

type feature struct {
	Type       string         `json:"type"`
	Geometry   point          `json:"geometry"`
	Properties map[string]any `json:"properties"`
}

type point struct {
	Type        string     `json:"type"`
	Coordinates [2]float64 `json:"coordinates"`
}

// collection writes a FeatureCollection whose features each yields.
type collection struct {
	bw    *bufio.Writer
	first bool
}

func newCollection(w io.Writer) *collection {
	c := &collection{bw: bufio.NewWriterSize(w, 32<<10), first: true}
	// A bufio.Writer keeps its first error and returns it again from Flush (close).
	_, _ = c.bw.WriteString(`{"type":"FeatureCollection","features":[`)
	return c
}

func (c *collection) add(pos store.LatLon, props map[string]any) error {
	data, err := json.Marshal(feature{Type: "Feature", Geometry: point{Type: "Point", Coordinates: [2]float64{pos.Lon, pos.Lat}}, Properties: props})
	if err != nil {
		return err
	}
	sep := ",\n"
	if c.first {
		sep = "\n"
	}
	if _, err := c.bw.WriteString(sep); err != nil {
		return err
	}
	c.first = false
	_, err = c.bw.Write(data)
	return err
}

func (c *collection) close() error {
	if _, err := c.bw.WriteString("\n]}\n"); err != nil {
		return err
	}
	return c.bw.Flush()
}

// opt is a property that may be missing: null in GeoJSON.
func opt[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}

// PlantsGeoJSON writes one Point per plant whose position is known.
func PlantsGeoJSON(w io.Writer, beds []Bed, now time.Time) error {
	c := newCollection(w)
	for _, b := range beds {
		for _, p := range b.Plants {
			if p.Position == nil {
				continue
			}
			sum := spatial.PlantSummary(p.Plant, now)
			harvest, weeks := harvestOf(sum)
			main, all := healthOf(sum.Health)
			props := map[string]any{
				"bed": b.ID, "bed_name": b.Name, "plant": p.ID, "name": p.Name,
				"species": sum.Species, "variety": sum.Variety,
				"soil_humidity": opt(sum.SoilHumidity), "yield": opt(sum.Yield),
				"harvest": harvest, "harvest_weeks": opt(weeks),
				"health_water": opt(main[0]), "health_nutrients": opt(main[1]), "health_diseases": opt(main[2]), "health": all,
			}
			if err := c.add(*p.Position, props); err != nil {
				return err
			}
		}
	}
	return c.close()
}

// LogsGeoJSON writes one Point per log that points at a plant or bed whose position
// is known: the plant's, else the mean of its bed's plants.
func LogsGeoJSON(ctx context.Context, w io.Writer, src Source, beds []Bed) error {
	ix := indexBeds(beds)
	c := newCollection(w)
	err := src.EachLog(ctx, func(l store.Log) error {
		pos := ix.position(l)
		if pos == nil {
			return nil
		}
		var q, unit any
		if l.Quantity != nil {
			q, unit = l.Quantity.Value, l.Quantity.Unit
		}
		return c.add(*pos, map[string]any{
			"id": l.ID, "type": l.Type, "title": l.Title, "notes": l.Notes, "at": l.At.UTC().Format(time.RFC3339Nano),
			"status": l.Status, "bed": opt(l.Bed), "bed_name": ix.bedName(l), "plant": opt(l.Plant),
			"quantity": q, "unit": unit, "assignee": opt(l.Assignee), "author": l.Author,
		})
	})
	if err != nil {
		return err
	}
	return c.close()
}
