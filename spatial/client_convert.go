package spatial

import (
	"math"
	"strconv"
	"time"

	seerep "github.com/gardend/gardend/proto"
)

// Measurement keys of spatial-protocol.md.
const (
	keyHumidity    = "humidity"
	keyYield       = "approx_yield"
	keyGrowthState = "growth_state"
	keyStatus      = "status"
	keyPlanted     = "planting_date"
	keyVariety     = "variety"
	healthEntries  = 3 // health_0_… to health_2_…
)

// The conversions below are lenient about the numeric oneof member a server chose
// (an integral humidity may come as int64_data) but never invent a value: a missing,
// non-numeric or non-finite value is nil.

// asFloat reads a numeric MeasurementData as float64.
func asFloat(d *seerep.MeasurementData) *float64 {
	var f float64
	switch v := d.GetData().(type) {
	case *seerep.MeasurementData_DoubleData:
		f = v.DoubleData
	case *seerep.MeasurementData_Int64Data:
		f = float64(v.Int64Data)
	case *seerep.MeasurementData_Uint64Data:
		f = float64(v.Uint64Data)
	default:
		return nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// asInt reads a MeasurementData holding an integer (as int64, uint64 or an integral
// double in range) as int64.
func asInt(d *seerep.MeasurementData) (int64, bool) {
	switch v := d.GetData().(type) {
	case *seerep.MeasurementData_Int64Data:
		return v.Int64Data, true
	case *seerep.MeasurementData_Uint64Data:
		if v.Uint64Data <= math.MaxInt64 {
			return int64(v.Uint64Data), true
		}
	case *seerep.MeasurementData_DoubleData:
		f := v.DoubleData
		// 2^63 itself is out of range, hence < rather than <=.
		if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
			return int64(f), true
		}
	}
	return 0, false
}

// asString reads a string MeasurementData; other members are not text.
func asString(d *seerep.MeasurementData) (string, bool) {
	v, ok := d.GetData().(*seerep.MeasurementData_StringData)
	if !ok {
		return "", false
	}
	return v.StringData, true
}

// applyMeasurement copies a measurement's values into p.
func applyMeasurement(p *Plant, m *seerep.Measurement) {
	data := m.GetData()
	p.Humidity = asFloat(data[keyHumidity])
	p.Yield = asFloat(data[keyYield])
	p.GrowthState = asFloat(data[keyGrowthState])
	p.Status, _ = asString(data[keyStatus])
	for i := 0; i < healthEntries; i++ {
		prefix := "health_" + strconv.Itoa(i) + "_"
		typ, ok1 := asString(data[prefix+"type"])
		level, ok2 := asInt(data[prefix+"level"])
		// An entry needs both halves; a type that is empty names nothing.
		if ok1 && ok2 && typ != "" {
			p.Health = append(p.Health, Health{Type: typ, Level: level})
		}
	}
}

// applyInstance copies an instance's species and planting date into p.
func applyInstance(p *Plant, in *seerep.InstanceInfos) {
	p.Species = in.GetName()
	if s, ok := asInt(in.GetAttributes()[keyPlanted]); ok {
		t := time.Unix(s, 0).UTC()
		p.PlantedAt = &t
	}
}

// applyClass copies a class's variety into p.
func applyClass(p *Plant, cl *seerep.ClassInfos) {
	p.Variety, _ = asString(cl.GetAttributes()[keyVariety])
}

// convertTransform turns a wire transform into ours; nil when the answer has none.
func convertTransform(ts *seerep.TransformStamped) *Transform {
	tf := ts.GetTransform()
	if tf == nil {
		return nil
	}
	tr := tf.GetTranslation()
	out := &Transform{
		Translation: [3]float64{tr.GetX(), tr.GetY(), tr.GetZ()},
		Rotation:    [4]float64{0, 0, 0, 1}, // a transform sent without rotation is a pure shift
	}
	if rot := tf.GetRotation(); rot != nil {
		out.Rotation = [4]float64{rot.GetX(), rot.GetY(), rot.GetZ(), rot.GetW()}
	}
	return out
}
