package demo

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/gardend/gardend/spatial"
)

// WantBed is what a correct client reads for the bed with the given project uuid,
// worked out from the raw data by the rules of spatial-protocol.md, independently of
// the client's code. ok is false for an unknown uuid.
func (d *Dataset) WantBed(projectUUID string) (bed spatial.Bed, ok bool) {
	b := d.Bed(projectUUID)
	if b == nil {
		return spatial.Bed{}, false
	}
	bed = spatial.Bed{ProjectUUID: b.ProjectUUID, Name: b.Name, Origin: b.Geolocation}
	// A name may have several measurement geometries (one per scan): the oldest
	// names the plant, the newest gives its values; of several clouds the newest
	// counts; among equal stamps the first listed.
	first := map[string]Geometry{}
	meas := map[string]Geometry{}
	clouds := map[string]Geometry{}
	for _, g := range b.Geometries {
		switch g.Type {
		case TypeMeasurement:
			if f, dup := first[g.Name]; !dup || g.Stamp.Before(f.Stamp) {
				first[g.Name] = g
			}
			if m, dup := meas[g.Name]; !dup || g.Stamp.After(m.Stamp) {
				meas[g.Name] = g
			}
		case TypePointCloud:
			if c, dup := clouds[g.Name]; !dup || g.Stamp.After(c.Stamp) {
				clouds[g.Name] = g
			}
		}
	}
	for name, g := range meas {
		p := spatial.Plant{Name: name, ID: first[name].UUID, Measurement: g.UUID, MeasuredAt: g.Stamp.UTC()}
		data := b.Measurements[g.UUID]
		p.Humidity = wantFloat(data["humidity"])
		p.Yield = wantFloat(data["approx_yield"])
		p.GrowthState = wantFloat(data["growth_state"])
		p.Status, _ = data["status"].(string)
		for i := 0; i < 3; i++ {
			t, okT := data[fmt.Sprintf("health_%d_type", i)].(string)
			l, okL := wantInt(data[fmt.Sprintf("health_%d_level", i)])
			if okT && okL && t != "" {
				p.Health = append(p.Health, spatial.Health{Type: t, Level: l})
			}
		}
		if len(g.Labels) > 0 {
			if in, ok := b.Instances[g.Labels[0]]; ok {
				p.Species = in.Name
				if s, ok := wantInt(in.Attributes["planting_date"]); ok {
					t := time.Unix(s, 0).UTC()
					p.PlantedAt = &t
				}
			}
		}
		if len(g.Labels) > 1 {
			if cl, ok := b.Classes[g.Labels[1]]; ok {
				p.Variety, _ = cl.Attributes["variety"].(string)
			}
		}
		if cg, ok := clouds[name]; ok {
			ref := &spatial.CloudRef{UUID: cg.UUID, FrameID: cg.FrameID}
			if tf, ok := b.Transforms[cg.FrameID]; ok && cg.FrameID != FrameMap {
				ref.Transform = &tf
			}
			p.Cloud = ref
		}
		bed.Plants = append(bed.Plants, p)
	}
	sort.Slice(bed.Plants, func(i, j int) bool { return bed.Plants[i].Name < bed.Plants[j].Name })
	return bed, true
}

// wantFloat: any numeric member counts; non-numbers and non-finite numbers are missing.
func wantFloat(v any) *float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int64:
		f = float64(x)
	case uint64:
		f = float64(x)
	default:
		return nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// wantInt: integers, and doubles that hold an integer.
func wantInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), true
		}
	}
	return 0, false
}
