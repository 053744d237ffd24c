package spatial

import (
	"math"
	"reflect"
	"testing"
	"time"

	seerep "github.com/gardend/gardend/proto"
)

func mdDouble(v float64) *seerep.MeasurementData {
	return &seerep.MeasurementData{Data: &seerep.MeasurementData_DoubleData{DoubleData: v}}
}
func mdInt(v int64) *seerep.MeasurementData {
	return &seerep.MeasurementData{Data: &seerep.MeasurementData_Int64Data{Int64Data: v}}
}
func mdUint(v uint64) *seerep.MeasurementData {
	return &seerep.MeasurementData{Data: &seerep.MeasurementData_Uint64Data{Uint64Data: v}}
}
func mdString(v string) *seerep.MeasurementData {
	return &seerep.MeasurementData{Data: &seerep.MeasurementData_StringData{StringData: v}}
}
func mdBool(v bool) *seerep.MeasurementData {
	return &seerep.MeasurementData{Data: &seerep.MeasurementData_BoolData{BoolData: v}}
}

func cvFloat(v float64) *float64 { return &v }

func TestApplyMeasurement(t *testing.T) {
	tests := []struct {
		name string
		data map[string]*seerep.MeasurementData
		want Plant
	}{
		{"all present", map[string]*seerep.MeasurementData{
			"humidity": mdDouble(0.4), "approx_yield": mdDouble(1.5), "growth_state": mdDouble(0.5), "status": mdString("vegetating"),
			"health_0_type": mdString("water"), "health_0_level": mdInt(3),
			"health_1_type": mdString("nutrients"), "health_1_level": mdInt(0),
			"health_2_type": mdString("diseases"), "health_2_level": mdInt(5),
		}, Plant{Humidity: cvFloat(0.4), Yield: cvFloat(1.5), GrowthState: cvFloat(0.5), Status: "vegetating",
			Health: []Health{{"water", 3}, {"nutrients", 0}, {"diseases", 5}}}},
		{"nothing", nil, Plant{}},
		{"zero is a value", map[string]*seerep.MeasurementData{"humidity": mdDouble(0), "growth_state": mdInt(0)},
			Plant{Humidity: cvFloat(0), GrowthState: cvFloat(0)}},
		{"integers for doubles", map[string]*seerep.MeasurementData{"humidity": mdInt(1), "approx_yield": mdUint(3)},
			Plant{Humidity: cvFloat(1), Yield: cvFloat(3)}},
		{"garbage is missing", map[string]*seerep.MeasurementData{
			"humidity": mdString("wet"), "approx_yield": mdBool(true), "growth_state": {}, "status": mdDouble(1),
		}, Plant{}},
		{"non-finite is missing", map[string]*seerep.MeasurementData{
			"humidity": mdDouble(math.NaN()), "approx_yield": mdDouble(math.Inf(1)), "growth_state": mdDouble(math.Inf(-1)),
		}, Plant{}},
		{"nil data is missing", map[string]*seerep.MeasurementData{"humidity": nil, "health_0_type": nil, "health_0_level": mdInt(1)},
			Plant{}},
		{"health needs both halves", map[string]*seerep.MeasurementData{
			"health_0_type":  mdString("water"),
			"health_1_level": mdInt(2),
			"health_2_type":  mdString("diseases"), "health_2_level": mdInt(1),
		}, Plant{Health: []Health{{"diseases", 1}}}},
		{"health levels: integral doubles and uint64 count, others do not", map[string]*seerep.MeasurementData{
			"health_0_type": mdString("water"), "health_0_level": mdDouble(2),
			"health_1_type": mdString("nutrients"), "health_1_level": mdDouble(2.5),
			"health_2_type": mdString("diseases"), "health_2_level": mdUint(math.MaxUint64),
		}, Plant{Health: []Health{{"water", 2}}}},
		{"health: empty or non-string type", map[string]*seerep.MeasurementData{
			"health_0_type": mdString(""), "health_0_level": mdInt(2),
			"health_1_type": mdInt(7), "health_1_level": mdInt(2),
			"health_2_type": mdString("frost"), "health_2_level": mdInt(4),
		}, Plant{Health: []Health{{"frost", 4}}}},
		{"health index 3 is not read", map[string]*seerep.MeasurementData{
			"health_3_type": mdString("water"), "health_3_level": mdInt(1),
		}, Plant{}},
		{"huge double level", map[string]*seerep.MeasurementData{
			"health_0_type": mdString("water"), "health_0_level": mdDouble(1e19),
		}, Plant{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Plant
			applyMeasurement(&p, &seerep.Measurement{Data: tt.data})
			if !reflect.DeepEqual(p, tt.want) {
				t.Errorf("got %+v, want %+v", p, tt.want)
			}
		})
	}
}

func TestApplyInstanceAndClass(t *testing.T) {
	planted := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		inst    *seerep.InstanceInfos
		class   *seerep.ClassInfos
		species string
		variety string
		planted *time.Time
	}{
		{"both", &seerep.InstanceInfos{Name: "mangold", Attributes: map[string]*seerep.MeasurementData{"planting_date": mdInt(planted.Unix())}},
			&seerep.ClassInfos{Attributes: map[string]*seerep.MeasurementData{"variety": mdString("Lucullus")}}, "mangold", "Lucullus", &planted},
		{"date as double", &seerep.InstanceInfos{Name: "x", Attributes: map[string]*seerep.MeasurementData{"planting_date": mdDouble(float64(planted.Unix()))}},
			&seerep.ClassInfos{}, "x", "", &planted},
		{"garbage", &seerep.InstanceInfos{Attributes: map[string]*seerep.MeasurementData{"planting_date": mdString("yesterday")}},
			&seerep.ClassInfos{Attributes: map[string]*seerep.MeasurementData{"variety": mdInt(3)}}, "", "", nil},
		{"empty messages", &seerep.InstanceInfos{}, &seerep.ClassInfos{}, "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Plant
			applyInstance(&p, tt.inst)
			applyClass(&p, tt.class)
			if p.Species != tt.species || p.Variety != tt.variety || !reflect.DeepEqual(p.PlantedAt, tt.planted) {
				t.Errorf("got %q %q %v", p.Species, p.Variety, p.PlantedAt)
			}
		})
	}
}

func TestPlantsOf(t *testing.T) {
	g := func(name, uuid, typ, frame string, labels ...string) *seerep.GeometryInfo {
		return &seerep.GeometryInfo{Name: name, Uuid: uuid, Type: typ, FrameId: frame, Labels: labels}
	}
	d := &seerep.ProjectDetails{Geometries: []*seerep.GeometryInfo{
		g("b", "pc-b", "pointcloud", "cam"),
		g("a", "m-a", "measurement", "map", "i-a", "c-1"),
		g("b", "m-b", "measurement", "map", "i-b"),
		g("c", "pc-c", "pointcloud", "cam"), // a cloud alone is no plant
		g("a", "img-a", "image", "map"),
		g("B", "m-B", "measurement", "map"),  // sorts before "a" byte-wise
		g("a", "m-a2", "measurement", "map"), // a second measurement: the first wins
		g("d", "m-d", "measurement", ""),     // no cloud at all
		g("e", "pc-e", "pointcloud", ""),     // cloud with an empty frame
		g("e", "m-e", "measurement", "map", "i-e", "c-1"),
	}}
	plants, labels := plantsOf(d)
	var names, ids []string
	for _, p := range plants {
		names, ids = append(names, p.Name), append(ids, p.ID)
	}
	if want := []string{"B", "a", "b", "d", "e"}; !reflect.DeepEqual(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if want := []string{"m-B", "m-a", "m-b", "m-d", "m-e"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	if plants[2].Cloud == nil || plants[2].Cloud.UUID != "pc-b" || plants[2].Cloud.FrameID != "cam" || plants[1].Cloud != nil {
		t.Errorf("clouds: a %+v b %+v", plants[1].Cloud, plants[2].Cloud)
	}
	if got := distinct(labels, 1); !reflect.DeepEqual(got, []string{"c-1"}) {
		t.Errorf("classes %v", got)
	}
	if got := distinct(labels, 0); !reflect.DeepEqual(got, []string{"i-a", "i-b", "i-e"}) {
		t.Errorf("instances %v", got)
	}
	if got := framesOf(plants); !reflect.DeepEqual(got, []string{"cam"}) {
		t.Errorf("frames %v", got)
	}
}

func TestConvertTransform(t *testing.T) {
	tests := []struct {
		name string
		in   *seerep.TransformStamped
		want *Transform
	}{
		{"none", &seerep.TransformStamped{}, nil},
		{"full", &seerep.TransformStamped{Transform: &seerep.Transform{
			Translation: &seerep.Vector3{X: 1, Y: 2, Z: 3}, Rotation: &seerep.Quaternion{X: 0, Y: 0, Z: 0.6, W: 0.8}}},
			&Transform{Translation: [3]float64{1, 2, 3}, Rotation: [4]float64{0, 0, 0.6, 0.8}}},
		{"translation only", &seerep.TransformStamped{Transform: &seerep.Transform{Translation: &seerep.Vector3{X: 1}}},
			&Transform{Translation: [3]float64{1, 0, 0}, Rotation: [4]float64{0, 0, 0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := convertTransform(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConvertCloudDatatypes(t *testing.T) {
	pc := convertCloud(&seerep.PointCloud2{Fields: []*seerep.PointField{
		{Name: "x", Datatype: seerep.PointField_FLOAT32},
		{Name: "y", Datatype: seerep.PointField_FLOAT64},
		{Name: "odd", Datatype: seerep.PointField_Datatype(300)},
		{Name: "neg", Datatype: seerep.PointField_Datatype(-1)},
		{Name: "i8", Datatype: seerep.PointField_INT8},
	}})
	var got []uint8
	for _, f := range pc.Fields {
		got = append(got, uint8(f.Datatype))
	}
	if want := []uint8{7, 8, 0, 0, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("datatypes %v, want %v", got, want)
	}
}
