package spatial

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/gardend/gardend/spatial/cloud"
)

// xyzCloud lays points out as float32 little-endian x, y, z, packed: the usual case.
func xyzCloud(points [][3]float64) cloud.PointCloud {
	data := make([]byte, 0, 12*len(points))
	for _, p := range points {
		for _, v := range p {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(v)))
		}
	}
	return cloud.PointCloud{
		Width: uint32(len(points)), Height: 1, PointStep: 12, RowStep: uint32(12 * len(points)),
		Fields: []cloud.Field{
			{Name: "x", Offset: 0, Datatype: cloud.Float32, Count: 1},
			{Name: "y", Offset: 4, Datatype: cloud.Float32, Count: 1},
			{Name: "z", Offset: 8, Datatype: cloud.Float32, Count: 1},
		},
		Data: data,
	}
}

// paddedBigEndianCloud puts the points into two rows of big-endian FLOAT64 points
// with y before x, 40-byte points and 16 bytes of row padding, between two NaN points
// that must be skipped. Padding and unused slots are 0xff (NaN if misread).
func paddedBigEndianCloud(points [][3]float64) cloud.PointCloud {
	nan := math.NaN()
	all := append(append([][3]float64{{nan, 0, 0}}, points...), [3]float64{0, nan, 0})
	const ps, pad = 40, 16
	w := uint32((len(all) + 1) / 2)
	rs := w*ps + pad
	data := make([]byte, 2*rs)
	for i := range data {
		data[i] = 0xff
	}
	for i, p := range all {
		at := data[uint32(i)/w*rs+uint32(i)%w*ps:]
		binary.BigEndian.PutUint64(at[8:], math.Float64bits(p[1]))
		binary.BigEndian.PutUint64(at[24:], math.Float64bits(p[0]))
		binary.BigEndian.PutUint64(at[32:], math.Float64bits(p[2]))
	}
	return cloud.PointCloud{
		Width: w, Height: 2, PointStep: ps, RowStep: rs, BigEndian: true,
		Fields: []cloud.Field{
			{Name: "y", Offset: 8, Datatype: cloud.Float64, Count: 1},
			{Name: "intensity", Offset: 16, Datatype: cloud.Uint16, Count: 1},
			{Name: "x", Offset: 24, Datatype: cloud.Float64, Count: 1},
			{Name: "z", Offset: 32, Datatype: cloud.Float64, Count: 1},
		},
		Data: data,
	}
}

func TestPlantPositionVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		tf := &Transform{Translation: v.Translation, Rotation: v.Rotation}
		for layout, pc := range map[string]cloud.PointCloud{
			"float32 packed":            xyzCloud(v.Points),
			"float64 big-endian padded": paddedBigEndianCloud(v.Points),
		} {
			got, err := PlantPosition(pc, "camera", tf, v.Origin)
			if err != nil || !near(got, v.Expect, degTol) {
				t.Errorf("%s, %s: got %.15f, %.15f (%v), want %.15f, %.15f",
					v.Name, layout, got.Lat, got.Lon, err, v.Expect.Lat, v.Expect.Lon)
			}
			if n := points(t, pc); n != len(v.Points) {
				t.Errorf("%s, %s: centroid over %d points, want %d", v.Name, layout, n, len(v.Points))
			}
		}
	}
}

func points(t *testing.T, pc cloud.PointCloud) int {
	t.Helper()
	_, _, n, err := cloud.Centroid(pc)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPlantPositionFrames(t *testing.T) {
	origin := LatLon{Lat: -33.8568, Lon: 151.2153}
	pc := xyzCloud([][3]float64{{2, 3, 9}, {4, 5, -9}}) // centroid (3, 4)
	h := math.Sqrt(0.5)
	cases := []struct {
		name    string
		frame   string
		tf      *Transform
		e, n    float64
		wantErr error
	}{
		{"map without transform is identity", "map", nil, 3, 4, nil},
		{"other frame without transform", "camera", nil, 0, 0, ErrNoTransform},
		{"/map is not map", "/map", nil, 0, 0, ErrNoTransform},
		{"map with a transform uses it", "map", &Transform{Translation: [3]float64{1, 1, 0}, Rotation: [4]float64{0, 0, 0, 1}}, 4, 5, nil},
		// Tilted 90° about x: (3, 4, 0) → (3, 0, 4); the height is dropped.
		{"roll about x", "tilted", &Transform{Rotation: [4]float64{h, 0, 0, h}}, 3, 0, nil},
		// About y: (3, 4, 0) → (0, 4, −3).
		{"pitch about y", "tilted", &Transform{Rotation: [4]float64{0, h, 0, h}}, 0, 4, nil},
		{"zero quaternion", "camera", &Transform{}, 0, 0, ErrInvalidTransform},
	}
	for _, c := range cases {
		got, err := PlantPosition(pc, c.frame, c.tf, origin)
		if !errors.Is(err, c.wantErr) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.wantErr)
			continue
		}
		if want := LocalToWGS84(origin, c.e, c.n, 0); err == nil && !near(got, want, 1e-12) {
			t.Errorf("%s: got %v, want %v", c.name, got, want)
		}
	}
}

func TestPlantPositionErrors(t *testing.T) {
	origin := LatLon{Lat: 52.3171, Lon: 7.6306}
	nan := math.NaN()
	empty := xyzCloud(nil)
	allNaN := xyzCloud([][3]float64{{nan, 1, 0}, {1, math.Inf(1), 0}})
	noY := xyzCloud([][3]float64{{1, 2, 3}})
	noY.Fields = noY.Fields[:1]
	cases := []struct {
		name   string
		pc     cloud.PointCloud
		origin LatLon
		want   error
	}{
		{"empty cloud", empty, origin, cloud.ErrNoPoints},
		{"no finite point", allNaN, origin, cloud.ErrNoPoints},
		{"malformed cloud", noY, origin, cloud.ErrInvalid},
		{"NaN origin", xyzCloud([][3]float64{{1, 2, 3}}), LatLon{Lat: nan, Lon: 0}, ErrInvalidOrigin},
		{"latitude beyond 90", xyzCloud([][3]float64{{1, 2, 3}}), LatLon{Lat: 91, Lon: 0}, ErrInvalidOrigin},
		{"infinite longitude", xyzCloud([][3]float64{{1, 2, 3}}), LatLon{Lat: 0, Lon: math.Inf(-1)}, ErrInvalidOrigin},
	}
	for _, c := range cases {
		if _, err := PlantPosition(c.pc, "map", nil, c.origin); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}
