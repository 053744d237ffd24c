package cloud

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

var allTypes = []Datatype{Int8, Uint8, Int16, Uint16, Int32, Uint32, Float32, Float64}

func TestCentroidEveryDatatype(t *testing.T) {
	pts := [][]float64{{1, 2, 9}, {3, 10, 9}, {8, 0, 9}, {4, 4, 9}}
	for _, dt := range allTypes {
		for _, big := range []bool{false, true} {
			pc := packed([]string{"x", "y", "z"}, dt, big, pts)
			x, y, n, err := Centroid(pc)
			if err != nil || n != 4 || x != 4 || y != 4 {
				t.Errorf("%v big=%v: got (%v, %v, %d, %v), want (4, 4, 4, nil)", dt, big, x, y, n, err)
			}
			if err := pc.Validate(); err != nil {
				t.Errorf("%v big=%v: Validate: %v", dt, big, err)
			}
		}
	}
}

func TestCentroidNegativeAndExtremeIntegers(t *testing.T) {
	cases := []struct {
		dt   Datatype
		x, y float64
	}{
		{Int8, -128, 127}, {Uint8, 255, 0}, {Int16, -32768, 32767}, {Uint16, 65535, 1},
		{Int32, math.MinInt32, math.MaxInt32}, {Uint32, math.MaxUint32, 7},
	}
	for _, c := range cases {
		for _, big := range []bool{false, true} {
			pc := packed([]string{"x", "y"}, c.dt, big, [][]float64{{c.x, c.y}})
			x, y, n, err := Centroid(pc)
			if err != nil || n != 1 || x != c.x || y != c.y {
				t.Errorf("%v big=%v: got (%v, %v, %d, %v), want (%v, %v)", c.dt, big, x, y, n, err, c.x, c.y)
			}
		}
	}
}

func TestCentroidLayouts(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name         string
		fields       []Field
		ps, w, h, rs uint32
		pts          [][]float64
		wantX, wantY float64
		wantN        int
	}{
		{
			name: "padded point, y before x",
			fields: []Field{
				{Name: "y", Offset: 4, Datatype: Float32, Count: 1},
				{Name: "x", Offset: 12, Datatype: Float32, Count: 1},
			},
			ps: 32, w: 2, h: 1, rs: 64,
			pts:   [][]float64{{1, 2}, {3, 4}},
			wantX: 3, wantY: 2, wantN: 2,
		},
		{
			name: "rows padded beyond width·point_step",
			fields: []Field{
				{Name: "x", Offset: 0, Datatype: Float64, Count: 1},
				{Name: "y", Offset: 8, Datatype: Float64, Count: 1},
			},
			ps: 16, w: 2, h: 3, rs: 40,
			pts:   [][]float64{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}},
			wantX: 3.5, wantY: 3.5, wantN: 6,
		},
		{
			name: "NaN and Inf points skipped",
			fields: []Field{
				{Name: "x", Offset: 0, Datatype: Float32, Count: 1},
				{Name: "y", Offset: 4, Datatype: Float32, Count: 1},
			},
			ps: 8, w: 5, h: 1, rs: 40,
			pts:   [][]float64{{nan, 1}, {2, 4}, {1, inf}, {-inf, 0}, {4, 8}},
			wantX: 3, wantY: 6, wantN: 2,
		},
		{
			name: "NaN first point, float64",
			fields: []Field{
				{Name: "x", Offset: 0, Datatype: Float64, Count: 1},
				{Name: "y", Offset: 8, Datatype: Float64, Count: 1},
			},
			ps: 16, w: 3, h: 1, rs: 48,
			pts:   [][]float64{{1, nan}, {inf, 2}, {5, 6}},
			wantX: 5, wantY: 6, wantN: 1,
		},
		{
			name: "count>1 uses the first element",
			fields: []Field{
				{Name: "x", Offset: 0, Datatype: Float32, Count: 3},
				{Name: "y", Offset: 12, Datatype: Int16, Count: 2},
			},
			ps: 16, w: 2, h: 1, rs: 32,
			pts:   [][]float64{{1, 100, 100, 2, 100}, {3, nan, nan, 4, 100}},
			wantX: 2, wantY: 3, wantN: 2,
		},
		{
			name: "count 0 read as 1",
			fields: []Field{
				{Name: "x", Offset: 0, Datatype: Float32, Count: 0},
				{Name: "y", Offset: 4, Datatype: Float32, Count: 0},
			},
			ps: 8, w: 1, h: 1, rs: 8,
			pts:   [][]float64{{7, 8}},
			wantX: 7, wantY: 8, wantN: 1,
		},
		{
			name: "mixed datatypes",
			fields: []Field{
				{Name: "x", Offset: 0, Datatype: Uint8, Count: 1},
				{Name: "y", Offset: 2, Datatype: Float64, Count: 1},
				{Name: "rgb", Offset: 10, Datatype: Uint32, Count: 1},
			},
			ps: 16, w: 2, h: 2, rs: 40,
			pts:   [][]float64{{1, 0.5, 0}, {2, 1.5, 0}, {3, 2.5, 0}, {4, nan, 0}},
			wantX: 2, wantY: 1.5, wantN: 3,
		},
	}
	for _, c := range cases {
		for _, big := range []bool{false, true} {
			pc := build(c.fields, c.ps, c.w, c.h, c.rs, big, c.pts)
			x, y, n, err := Centroid(pc)
			if err != nil || n != c.wantN || x != c.wantX || y != c.wantY {
				t.Errorf("%s big=%v: got (%v, %v, %d, %v), want (%v, %v, %d)",
					c.name, big, x, y, n, err, c.wantX, c.wantY, c.wantN)
			}
		}
	}
}

func TestCentroidFarFromOrigin(t *testing.T) {
	// UTM-like coordinates: the mean of many float64 values must stay exact to well
	// under a millimetre.
	pts := make([][]float64, 100000)
	for i := range pts {
		d := float64(i%2)*2 - 1 // ±1
		pts[i] = []float64{500000.25 + d, 5800000.75 - d}
	}
	pc := packed([]string{"x", "y"}, Float64, false, pts)
	x, y, n, err := Centroid(pc)
	if err != nil || n != len(pts) || math.Abs(x-500000.25) > 1e-7 || math.Abs(y-5800000.75) > 1e-7 {
		t.Fatalf("got (%.9f, %.9f, %d, %v)", x, y, n, err)
	}
}

func TestCentroidErrors(t *testing.T) {
	ok := packed([]string{"x", "y"}, Float32, false, [][]float64{{1, 2}})
	with := func(edit func(*PointCloud)) PointCloud {
		pc := ok
		pc.Fields = append([]Field(nil), ok.Fields...)
		edit(&pc)
		return pc
	}
	nan := math.NaN()
	cases := []struct {
		name string
		pc   PointCloud
		want error
	}{
		{"no x", with(func(pc *PointCloud) { pc.Fields[0].Name = "X" }), ErrInvalid},
		{"no y", with(func(pc *PointCloud) { pc.Fields = pc.Fields[:1] }), ErrInvalid},
		{"no fields", with(func(pc *PointCloud) { pc.Fields = nil }), ErrInvalid},
		{"unset datatype", with(func(pc *PointCloud) { pc.Fields[1].Datatype = 0 }), ErrInvalid},
		{"datatype 9", with(func(pc *PointCloud) { pc.Fields[0].Datatype = 9 }), ErrInvalid},
		{"offset beyond point_step", with(func(pc *PointCloud) { pc.Fields[1].Offset = 5 }), ErrInvalid},
		{"huge offset", with(func(pc *PointCloud) { pc.Fields[1].Offset = math.MaxUint32 }), ErrInvalid},
		{"huge count", with(func(pc *PointCloud) { pc.Fields[1].Count = math.MaxUint32 }), ErrInvalid},
		{"short data", with(func(pc *PointCloud) { pc.Data = pc.Data[:7] }), ErrInvalid},
		{"row_step < width·point_step", with(func(pc *PointCloud) { pc.RowStep = 7 }), ErrInvalid},
		{"point_step 0", with(func(pc *PointCloud) { pc.PointStep = 0 }), ErrInvalid},
		{"claimed size far beyond data", with(func(pc *PointCloud) {
			pc.Width, pc.Height, pc.RowStep = 1<<20, 1<<10, 8<<20
		}), ErrInvalid},
		{"width·height overflow", with(func(pc *PointCloud) {
			pc.Width, pc.Height, pc.PointStep, pc.RowStep = math.MaxUint32, math.MaxUint32, 8, math.MaxUint32
		}), ErrInvalid},
		{"all NaN", packed([]string{"x", "y"}, Float32, true, [][]float64{{nan, 1}, {1, nan}}), ErrNoPoints},
		{"empty", with(func(pc *PointCloud) { pc.Width, pc.RowStep, pc.Data = 0, 0, nil }), ErrNoPoints},
		{"zero height", with(func(pc *PointCloud) { pc.Height = 0 }), ErrNoPoints},
	}
	for _, c := range cases {
		_, _, n, err := Centroid(c.pc)
		if !errors.Is(err, c.want) || n != 0 {
			t.Errorf("%s: Centroid gave n=%d err=%v, want %v", c.name, n, err, c.want)
		}
		if verr := c.pc.Validate(); (verr != nil) != errors.Is(c.want, ErrInvalid) {
			t.Errorf("%s: Validate = %v", c.name, verr)
		}
	}
}

func TestCentroidOverflow(t *testing.T) {
	pc := packed([]string{"x", "y"}, Float64, false, [][]float64{{-1e308, 0}, {1e308, 0}})
	if _, _, _, err := Centroid(pc); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

func TestCentroidIgnoresOtherFields(t *testing.T) {
	pc := packed([]string{"x", "y", "rgb"}, Float32, false, [][]float64{{1, 2, 0}})
	pc.Fields[2].Datatype = 0
	if _, _, n, err := Centroid(pc); err != nil || n != 1 {
		t.Fatalf("Centroid = %d, %v", n, err)
	}
	if err := pc.Validate(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate = %v, want ErrInvalid", err)
	}
}

// TestCentroidFastPathsMatchGeneric checks the specialised loops against the generic
// decoder on random, partly non-finite clouds.
func TestCentroidFastPathsMatchGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []Datatype{Float32, Float64} {
		for iter := 0; iter < 50; iter++ {
			w, h := uint32(1+rng.IntN(50)), uint32(1+rng.IntN(4))
			ps := 2*dt.Size() + uint32(rng.IntN(9))
			rs := w*ps + uint32(rng.IntN(5))
			fields := []Field{{Name: "x", Offset: 0, Datatype: dt}, {Name: "y", Offset: dt.Size(), Datatype: dt}}
			pts := make([][]float64, w*h)
			for i := range pts {
				pts[i] = []float64{rng.NormFloat64() * 100, rng.NormFloat64() * 100}
				if rng.IntN(10) == 0 {
					pts[i][rng.IntN(2)] = math.NaN()
				}
			}
			pc := build(fields, ps, w, h, rs, false, pts)
			x, y, n, err := Centroid(pc)
			gx, gy, gn, gerr := genericCentroid(pc)
			if x != gx || y != gy || n != gn || !errors.Is(err, gerr) {
				t.Fatalf("%v: fast (%v,%v,%d,%v) != generic (%v,%v,%d,%v)", dt, x, y, n, err, gx, gy, gn, gerr)
			}
		}
	}
}

// genericCentroid is Centroid forced onto the generic decoder.
func genericCentroid(pc PointCloud) (x, y float64, n int, err error) {
	fx, fy, err := pc.xy()
	if err != nil {
		return 0, 0, 0, err
	}
	l := layout{w: int(pc.Width), h: int(pc.Height), ps: int(pc.PointStep), rs: int(pc.RowStep),
		ox: int(fx.Offset), oy: int(fy.Offset), tx: fx.Datatype, ty: fy.Datatype, big: pc.BigEndian}
	x0, y0, ok := l.first(pc.Data)
	if !ok {
		return 0, 0, 0, ErrNoPoints
	}
	s := l.sumGeneric(pc.Data, x0, y0)
	x, y = x0+s.x/float64(s.n), y0+s.y/float64(s.n)
	if !finite(x) || !finite(y) {
		return 0, 0, 0, ErrInvalid
	}
	return x, y, s.n, nil
}

func benchCloud(dt Datatype, big bool, ps uint32) PointCloud {
	const w, h = 4096, 256 // a million points, like a dense plant scan
	rng := rand.New(rand.NewPCG(3, 4))
	fields := []Field{
		{Name: "x", Offset: 0, Datatype: dt, Count: 1},
		{Name: "y", Offset: dt.Size(), Datatype: dt, Count: 1},
		{Name: "z", Offset: 2 * dt.Size(), Datatype: dt, Count: 1},
	}
	pts := make([][]float64, w*h)
	for i := range pts {
		pts[i] = []float64{rng.Float64(), rng.Float64(), rng.Float64()}
	}
	return build(fields, ps, w, h, w*ps, big, pts)
}

func BenchmarkCentroid(b *testing.B) {
	cases := []struct {
		name string
		dt   Datatype
		big  bool
		ps   uint32
	}{
		{"float32LE/step16", Float32, false, 16},
		{"float32LE/step32", Float32, false, 32},
		{"float64LE/step32", Float64, false, 32},
		{"float32BE/step16", Float32, true, 16},
		{"int16LE/step8", Int16, false, 8},
	}
	for _, c := range cases {
		pc := benchCloud(c.dt, c.big, c.ps)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(pc.Data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := Centroid(pc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
