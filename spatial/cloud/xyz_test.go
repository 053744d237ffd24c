package cloud

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestMeanXYZAndFinitePoints(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	pts := [][]float64{
		{1, 2, 3, 7}, {nan, 0, 0, 8}, {3, 4, 5, 9}, {0, inf, 0, 10}, {0, 0, nan, 11}, {5, 6, 7, 12},
	}
	for _, dt := range []Datatype{Float32, Float64} {
		for _, big := range []bool{false, true} {
			pc := packed([]string{"x", "y", "z", "rgb"}, dt, big, pts)
			mean, n, err := MeanXYZ(pc)
			if err != nil || n != 3 || mean != [3]float64{3, 4, 5} {
				t.Errorf("%v big=%v: MeanXYZ = %v, %d, %v", dt, big, mean, n, err)
			}
			fin, err := FinitePoints(pc)
			if err != nil {
				t.Fatal(err)
			}
			if fin.Width != 3 || fin.Height != 1 || fin.BigEndian != big || len(fin.Fields) != 4 {
				t.Fatalf("%v big=%v: FinitePoints %d×%d", dt, big, fin.Width, fin.Height)
			}
			// The kept points are the original bytes, extra fields included.
			want := packed([]string{"x", "y", "z", "rgb"}, dt, big, [][]float64{pts[0], pts[2], pts[5]})
			if !bytes.Equal(fin.Data, want.Data) {
				t.Errorf("%v big=%v: kept points differ", dt, big)
			}
			var buf bytes.Buffer
			if err := WritePLY(&buf, fin); err != nil {
				t.Fatal(err)
			}
			back, err := ReadPLY(&buf)
			if err != nil || back.Width != 3 {
				t.Fatalf("round trip: %d points, %v", back.Width, err)
			}
			if m, _, _ := MeanXYZ(back); m != mean {
				t.Errorf("round trip mean %v, want %v", m, mean)
			}
		}
	}
}

func TestFinitePointsKeepsAnAllFiniteCloud(t *testing.T) {
	// An organised cloud with padded points and rows: nothing to drop, nothing copied.
	fields := []Field{{Name: "x", Offset: 0, Datatype: Float32}, {Name: "y", Offset: 4, Datatype: Float32}, {Name: "z", Offset: 8, Datatype: Float32}}
	pc := build(fields, 16, 2, 2, 40, false, [][]float64{{1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {4, 4, 4}})
	fin, err := FinitePoints(pc)
	if err != nil || &fin.Data[0] != &pc.Data[0] || fin.Height != 2 {
		t.Fatalf("FinitePoints copied or changed an all-finite cloud: %v", err)
	}
	if mean, n, err := MeanXYZ(pc); err != nil || n != 4 || mean != [3]float64{2.5, 2.5, 2.5} {
		t.Errorf("MeanXYZ = %v, %d, %v", mean, n, err)
	}
}

func TestMeanXYZErrors(t *testing.T) {
	nan := math.NaN()
	if _, _, err := MeanXYZ(packed([]string{"x", "y"}, Float32, false, [][]float64{{1, 2}})); !errors.Is(err, ErrInvalid) {
		t.Errorf("no z: %v", err)
	}
	if _, err := FinitePoints(packed([]string{"x", "z"}, Float32, false, [][]float64{{1, 2}})); !errors.Is(err, ErrInvalid) {
		t.Errorf("no y: %v", err)
	}
	if _, _, err := MeanXYZ(packed([]string{"x", "y", "z"}, Float32, false, [][]float64{{nan, 1, 1}})); !errors.Is(err, ErrNoPoints) {
		t.Errorf("only NaN points: %v", err)
	}
	short := packed([]string{"x", "y", "z"}, Float32, false, [][]float64{{1, 1, 1}})
	short.Data = short.Data[:4]
	if _, _, err := MeanXYZ(short); !errors.Is(err, ErrInvalid) {
		t.Errorf("truncated data: %v", err)
	}
	far := packed([]string{"x", "y", "z"}, Float64, false, [][]float64{{4e6 + 0.1, 5e6 + 0.2, 1}, {4e6 + 0.3, 5e6 + 0.4, 3}})
	if mean, _, _ := MeanXYZ(far); math.Abs(mean[0]-(4e6+0.2)) > 1e-9 || math.Abs(mean[1]-(5e6+0.3)) > 1e-9 || mean[2] != 2 {
		t.Errorf("far from the origin: %v", mean)
	}
}
