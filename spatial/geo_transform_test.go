package spatial

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func close3(a, b [3]float64, tol float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

// axisAngle is the quaternion (x, y, z, w) of a rotation by angle about a unit axis.
func axisAngle(axis [3]float64, angle float64) [4]float64 {
	s, c := math.Sincos(angle / 2)
	return [4]float64{axis[0] * s, axis[1] * s, axis[2] * s, c}
}

func TestTransformApply(t *testing.T) {
	h := math.Sqrt(0.5)
	cases := []struct {
		name string
		tf   Transform
		p    [3]float64
		want [3]float64
	}{
		{"identity", Transform{Rotation: [4]float64{0, 0, 0, 1}}, [3]float64{1, 2, 3}, [3]float64{1, 2, 3}},
		{"translation only", Transform{Translation: [3]float64{10, -5, 1}, Rotation: [4]float64{0, 0, 0, 1}}, [3]float64{1, 2, 3}, [3]float64{11, -3, 4}},
		{"yaw 90°: x to y", Transform{Rotation: [4]float64{0, 0, h, h}}, [3]float64{2, 0, 0}, [3]float64{0, 2, 0}},
		{"roll 90° about x: y to z", Transform{Rotation: [4]float64{h, 0, 0, h}}, [3]float64{0, 1, 0}, [3]float64{0, 0, 1}},
		{"roll 90° about x: z to −y", Transform{Rotation: [4]float64{h, 0, 0, h}}, [3]float64{0, 0, 1}, [3]float64{0, -1, 0}},
		{"pitch 90° about y: z to x", Transform{Rotation: [4]float64{0, h, 0, h}}, [3]float64{0, 0, 1}, [3]float64{1, 0, 0}},
		{"pitch 90° about y: x to −z", Transform{Rotation: [4]float64{0, h, 0, h}}, [3]float64{1, 0, 0}, [3]float64{0, 0, -1}},
		{"180° about x then translate", Transform{Translation: [3]float64{1, 1, 1}, Rotation: [4]float64{1, 0, 0, 0}}, [3]float64{1, 2, 3}, [3]float64{2, -1, -2}},
		{"120° about (1,1,1) cycles axes", Transform{Rotation: [4]float64{0.5, 0.5, 0.5, 0.5}}, [3]float64{1, 0, 0}, [3]float64{0, 1, 0}},
		{"not normalised (×3)", Transform{Rotation: [4]float64{0, 0, 3 * h, 3 * h}}, [3]float64{2, 0, 0}, [3]float64{0, 2, 0}},
		{"tiny quaternion", Transform{Rotation: [4]float64{0, 0, 1e-300, 1e-300}}, [3]float64{2, 0, 0}, [3]float64{0, 2, 0}},
		{"huge quaternion", Transform{Rotation: [4]float64{0, 0, 1e300, 1e300}}, [3]float64{2, 0, 0}, [3]float64{0, 2, 0}},
		{"−q is the same rotation", Transform{Rotation: [4]float64{0, 0, -h, -h}}, [3]float64{2, 0, 0}, [3]float64{0, 2, 0}},
	}
	for _, c := range cases {
		if err := CheckTransform(c.tf); err != nil {
			t.Errorf("%s: CheckTransform: %v", c.name, err)
		}
		if got := ApplyTransform(c.tf, c.p); !close3(got, c.want, 1e-12) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestTransformMatchesMatrix compares ApplyTransform with the rotation-matrix form of random
// quaternions, and checks that rotations keep lengths.
func TestTransformMatchesMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		q := [4]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		p := [3]float64{rng.NormFloat64() * 10, rng.NormFloat64() * 10, rng.NormFloat64() * 10}
		tr := [3]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		got := ApplyTransform(Transform{Translation: tr, Rotation: q}, p)
		n := math.Sqrt(q[0]*q[0] + q[1]*q[1] + q[2]*q[2] + q[3]*q[3])
		x, y, z, w := q[0]/n, q[1]/n, q[2]/n, q[3]/n
		r := [3][3]float64{
			{1 - 2*(y*y+z*z), 2 * (x*y - z*w), 2 * (x*z + y*w)},
			{2 * (x*y + z*w), 1 - 2*(x*x+z*z), 2 * (y*z - x*w)},
			{2 * (x*z - y*w), 2 * (y*z + x*w), 1 - 2*(x*x+y*y)},
		}
		var want [3]float64
		for i := range want {
			want[i] = r[i][0]*p[0] + r[i][1]*p[1] + r[i][2]*p[2] + tr[i]
		}
		if !close3(got, want, 1e-12) {
			t.Fatalf("q %v p %v: got %v, want %v", q, p, got, want)
		}
		rot := ApplyTransform(Transform{Rotation: q}, p)
		if l0, l1 := math.Hypot(math.Hypot(p[0], p[1]), p[2]), math.Hypot(math.Hypot(rot[0], rot[1]), rot[2]); math.Abs(l0-l1) > 1e-12 {
			t.Fatalf("length %v became %v", l0, l1)
		}
	}
}

func TestTransformComposition(t *testing.T) {
	// Rotating by 30° then 60° about y is rotating by 90° about y.
	y := [3]float64{0, 1, 0}
	p := [3]float64{1, 2, 3}
	twice := ApplyTransform(Transform{Rotation: axisAngle(y, math.Pi/3)}, ApplyTransform(Transform{Rotation: axisAngle(y, math.Pi/6)}, p))
	once := ApplyTransform(Transform{Rotation: axisAngle(y, math.Pi/2)}, p)
	if !close3(twice, once, 1e-12) || !close3(once, [3]float64{3, 2, -1}, 1e-12) {
		t.Fatalf("twice %v, once %v", twice, once)
	}
}

func TestTransformInvalid(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tf := range []Transform{
		{}, // zero quaternion
		{Rotation: [4]float64{0, 0, 0, nan}},
		{Rotation: [4]float64{inf, 0, 0, 1}},
		{Rotation: [4]float64{0, 0, 0, 1}, Translation: [3]float64{0, nan, 0}},
		{Rotation: [4]float64{0, 0, 0, 1}, Translation: [3]float64{-inf, 0, 0}},
	} {
		if err := CheckTransform(tf); !errors.Is(err, ErrInvalidTransform) {
			t.Errorf("%+v: CheckTransform = %v", tf, err)
		}
		m := ApplyTransform(tf, [3]float64{1, 2, 3})
		if finite := !math.IsNaN(m[0]+m[1]+m[2]) && !math.IsInf(m[0]+m[1]+m[2], 0); finite {
			t.Errorf("%+v: ApplyTransform = %v, want NaN", tf, m)
		}
	}
}
