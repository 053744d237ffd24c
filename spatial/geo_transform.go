package spatial

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidTransform is wrapped by CheckTransform: a rotation that is zero or not
// finite cannot be normalised, and a non-finite translation leads nowhere.
var ErrInvalidTransform = errors.New("invalid transform")

// CheckTransform reports whether t can be applied.
func CheckTransform(t Transform) error {
	if _, ok := unitRotation(t); !ok {
		return fmt.Errorf("%w: rotation %v cannot be normalised", ErrInvalidTransform, t.Rotation)
	}
	for _, v := range t.Translation {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: translation %v is not finite", ErrInvalidTransform, t.Translation)
		}
	}
	return nil
}

// ApplyTransform maps p by t: R(q)·p + translation with the quaternion normalised
// first (the TF convention: child-frame coordinates into the parent frame). For a
// transform that fails CheckTransform the result is NaN, so a bad transform cannot
// pass for a good position.
func ApplyTransform(t Transform, p [3]float64) [3]float64 {
	q, ok := unitRotation(t)
	if !ok {
		nan := math.NaN()
		return [3]float64{nan, nan, nan}
	}
	// v' = v + w·c + u×c with c = 2·u×v: a unit-quaternion rotation without a matrix.
	u := [3]float64{q[0], q[1], q[2]}
	c := cross(u, p)
	for i := range c {
		c[i] *= 2
	}
	uc := cross(u, c)
	var m [3]float64
	for i := range m {
		m[i] = p[i] + q[3]*c[i] + uc[i] + t.Translation[i]
	}
	return m
}

// unitRotation returns t.Rotation scaled to length 1. Dividing by the largest
// component first keeps the sum of squares from overflowing or underflowing.
func unitRotation(t Transform) ([4]float64, bool) {
	q := t.Rotation
	var big float64
	for _, v := range q {
		big = math.Max(big, math.Abs(v)) // Max propagates NaN
	}
	if big == 0 || math.IsNaN(big) || math.IsInf(big, 0) {
		return q, false
	}
	var n float64
	for i := range q {
		q[i] /= big
		n += q[i] * q[i]
	}
	n = math.Sqrt(n)
	for i := range q {
		q[i] /= n
	}
	return q, true
}

func cross(a, b [3]float64) [3]float64 {
	return [3]float64{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}
