package demo

import (
	"math"

	"github.com/gardend/gardend/spatial"
)

// Small rigid-transform helpers for building consistent frames and clouds.

type vec3 [3]float64

// quatFromEuler returns the unit quaternion (x, y, z, w) of roll about x, then pitch
// about y, then yaw about z (extrinsic), the ROS convention.
func quatFromEuler(roll, pitch, yaw float64) [4]float64 {
	cr, sr := math.Cos(roll/2), math.Sin(roll/2)
	cp, sp := math.Cos(pitch/2), math.Sin(pitch/2)
	cy, sy := math.Cos(yaw/2), math.Sin(yaw/2)
	return [4]float64{
		sr*cp*cy - cr*sp*sy,
		cr*sp*cy + sr*cp*sy,
		cr*cp*sy - sr*sp*cy,
		cr*cp*cy + sr*sp*sy,
	}
}

func normalise(q [4]float64) [4]float64 {
	n := math.Sqrt(q[0]*q[0] + q[1]*q[1] + q[2]*q[2] + q[3]*q[3])
	return [4]float64{q[0] / n, q[1] / n, q[2] / n, q[3] / n}
}

// rotate applies the rotation of q (normalised first) to v.
func rotate(q [4]float64, v vec3) vec3 {
	q = normalise(q)
	x, y, z, w := q[0], q[1], q[2], q[3]
	// v' = v + 2w(u×v) + 2u×(u×v), u = (x, y, z)
	cx := y*v[2] - z*v[1]
	cy := z*v[0] - x*v[2]
	cz := x*v[1] - y*v[0]
	return vec3{
		v[0] + 2*(w*cx+y*cz-z*cy),
		v[1] + 2*(w*cy+z*cx-x*cz),
		v[2] + 2*(w*cz+x*cy-y*cx),
	}
}

// apply maps child-frame point p into the parent frame: R(q̂)·p + t.
func apply(t spatial.Transform, p vec3) vec3 {
	r := rotate(t.Rotation, p)
	return vec3{r[0] + t.Translation[0], r[1] + t.Translation[1], r[2] + t.Translation[2]}
}

// applyInverse maps parent-frame point m into the child frame.
func applyInverse(t spatial.Transform, m vec3) vec3 {
	q := normalise(t.Rotation)
	conj := [4]float64{-q[0], -q[1], -q[2], q[3]}
	return rotate(conj, vec3{m[0] - t.Translation[0], m[1] - t.Translation[1], m[2] - t.Translation[2]})
}

// WGS84 radii of curvature, for laying beds out and drawing them. This local
// approximation is only for placing things; exact conversions belong to the position
// code.
const (
	wgs84A  = 6378137.0
	wgs84E2 = 6.69437999014e-3
)

// offsetLatLon moves p by east and north metres.
func offsetLatLon(p spatial.LatLon, east, north float64) spatial.LatLon {
	phi := p.Lat * math.Pi / 180
	s := math.Sin(phi)
	w := 1 - wgs84E2*s*s
	m := wgs84A * (1 - wgs84E2) / (w * math.Sqrt(w)) // meridional radius
	n := wgs84A / math.Sqrt(w)                       // prime vertical radius
	return spatial.LatLon{
		Lat: p.Lat + north/m*180/math.Pi,
		Lon: p.Lon + east/(n*math.Cos(phi))*180/math.Pi,
	}
}

// metresFrom is the inverse of offsetLatLon around origin o.
func metresFrom(o, p spatial.LatLon) (east, north float64) {
	phi := o.Lat * math.Pi / 180
	s := math.Sin(phi)
	w := 1 - wgs84E2*s*s
	m := wgs84A * (1 - wgs84E2) / (w * math.Sqrt(w))
	n := wgs84A / math.Sqrt(w)
	return (p.Lon - o.Lon) * math.Pi / 180 * n * math.Cos(phi), (p.Lat - o.Lat) * math.Pi / 180 * m
}
