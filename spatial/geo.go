package spatial

import "math"

// The WGS84 ellipsoid.
const (
	wgs84A  = 6378137.0
	wgs84F  = 1 / 298.257223563
	wgs84B  = wgs84A * (1 - wgs84F)
	wgs84E2 = wgs84F * (2 - wgs84F)   // first eccentricity squared
	wgs84EP = wgs84E2 / (1 - wgs84E2) // second eccentricity squared

	degToRad = math.Pi / 180
	radToDeg = 180 / math.Pi
)

// LocalToWGS84 returns the WGS84 latitude and longitude of the point (east, north, up)
// metres from origin in origin's local tangent plane (ENU, origin at height 0 on the
// ellipsoid). It is exact, not a flat-earth shortcut: local → ECEF → geodetic, the last
// step iterated to convergence, so it holds to about 1e-12° for offsets of many
// kilometres and at the poles. The longitude is normalised into (−180, 180] (at a pole
// itself any longitude is right). NaN in gives NaN out.
func LocalToWGS84(origin LatLon, east, north, up float64) LatLon {
	lat, lon, _ := localToGeodetic(origin, east, north, up)
	return LatLon{Lat: lat, Lon: lon}
}

// localToGeodetic is LocalToWGS84 with the height above the ellipsoid (for tests).
func localToGeodetic(origin LatLon, east, north, up float64) (lat, lon, h float64) {
	sinPhi, cosPhi := math.Sincos(origin.Lat * degToRad)
	sinLam, cosLam := math.Sincos(origin.Lon * degToRad)
	x0, y0, z0 := geodeticToECEF(sinPhi, cosPhi, sinLam, cosLam, 0)
	// Columns of the ENU→ECEF rotation: east, north and up unit vectors at the origin.
	x := x0 - sinLam*east - sinPhi*cosLam*north + cosPhi*cosLam*up
	y := y0 + cosLam*east - sinPhi*sinLam*north + cosPhi*sinLam*up
	z := z0 + cosPhi*north + sinPhi*up
	return ecefToGeodetic(x, y, z)
}

// geodeticToECEF takes the sines and cosines of latitude and longitude.
func geodeticToECEF(sinPhi, cosPhi, sinLam, cosLam, h float64) (x, y, z float64) {
	n := wgs84A / math.Sqrt(1-wgs84E2*sinPhi*sinPhi) // prime vertical radius
	return (n + h) * cosPhi * cosLam, (n + h) * cosPhi * sinLam, (n*(1-wgs84E2) + h) * sinPhi
}

// ecefToGeodetic uses Bowring's formula on the parametric latitude β, iterated until β
// stops changing (two or three rounds near the surface). atan2 throughout keeps it
// well-defined at the poles and on the equator.
func ecefToGeodetic(x, y, z float64) (lat, lon, h float64) {
	p := math.Hypot(x, y)
	beta := math.Atan2(z, (1-wgs84F)*p)
	var phi float64
	for range 10 {
		sinB, cosB := math.Sincos(beta)
		phi = math.Atan2(z+wgs84EP*wgs84B*sinB*sinB*sinB, p-wgs84E2*wgs84A*cosB*cosB*cosB)
		next := math.Atan2((1-wgs84F)*math.Sin(phi), math.Cos(phi))
		if math.Abs(next-beta) <= 1e-15 {
			break
		}
		beta = next
	}
	sinPhi, cosPhi := math.Sincos(phi)
	// This form of h is well-conditioned at every latitude.
	h = p*cosPhi + z*sinPhi - wgs84A*math.Sqrt(1-wgs84E2*sinPhi*sinPhi)
	lon = math.Atan2(y, x) * radToDeg
	if lon <= -180 {
		lon += 360
	}
	return phi * radToDeg, lon, h
}
