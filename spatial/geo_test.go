package spatial

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// vector is one worked case of shared/spec/coordinates-vectors.json.
type vector struct {
	Name        string       `json:"name"`
	Points      [][3]float64 `json:"points"`
	Translation [3]float64   `json:"translation"`
	Rotation    [4]float64   `json:"rotation_xyzw"`
	Origin      LatLon       `json:"origin"`
	Expect      LatLon       `json:"expect"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	b, err := os.ReadFile("../testdata/coordinates-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 {
		t.Fatal("no vectors")
	}
	return vs
}

const degTol = 1e-9

func near(a, b LatLon, tol float64) bool {
	dLon := math.Abs(a.Lon - b.Lon)
	dLon = math.Min(dLon, 360-dLon) // 180 and −179.9999… are neighbours
	return math.Abs(a.Lat-b.Lat) <= tol && dLon <= tol
}

func TestLocalToWGS84Vectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		var cx, cy float64
		for _, p := range v.Points {
			cx += p[0]
			cy += p[1]
		}
		n := float64(len(v.Points))
		m := ApplyTransform(Transform{Translation: v.Translation, Rotation: v.Rotation}, [3]float64{cx / n, cy / n, 0})
		got := LocalToWGS84(v.Origin, m[0], m[1], 0)
		if !near(got, v.Expect, degTol) {
			t.Errorf("%s: got %.15f, %.15f, want %.15f, %.15f", v.Name, got.Lat, got.Lon, v.Expect.Lat, v.Expect.Lon)
		}
	}
}

// toLocal is an independent inverse: geodetic → ECEF → ENU at origin, written out
// again here from the textbook formulas rather than reusing the code under test.
func toLocal(origin LatLon, lat, lon, h float64) (e, n, u float64) {
	ecef := func(latDeg, lonDeg, h float64) [3]float64 {
		const a, f = 6378137.0, 1 / 298.257223563
		e2 := f * (2 - f)
		phi, lam := latDeg*math.Pi/180, lonDeg*math.Pi/180
		N := a / math.Sqrt(1-e2*math.Sin(phi)*math.Sin(phi))
		return [3]float64{(N + h) * math.Cos(phi) * math.Cos(lam), (N + h) * math.Cos(phi) * math.Sin(lam), (N*(1-e2) + h) * math.Sin(phi)}
	}
	p, o := ecef(lat, lon, h), ecef(origin.Lat, origin.Lon, 0)
	d := [3]float64{p[0] - o[0], p[1] - o[1], p[2] - o[2]}
	phi, lam := origin.Lat*math.Pi/180, origin.Lon*math.Pi/180
	e = -math.Sin(lam)*d[0] + math.Cos(lam)*d[1]
	n = -math.Sin(phi)*math.Cos(lam)*d[0] - math.Sin(phi)*math.Sin(lam)*d[1] + math.Cos(phi)*d[2]
	u = math.Cos(phi)*math.Cos(lam)*d[0] + math.Cos(phi)*math.Sin(lam)*d[1] + math.Sin(phi)*d[2]
	return e, n, u
}

func roundTrip(t *testing.T, origin LatLon, e, n, u float64) LatLon {
	t.Helper()
	lat, lon, h := localToGeodetic(origin, e, n, u)
	if lon <= -180 || lon > 180 || lat < -90 || lat > 90 {
		t.Fatalf("origin %v offset (%v, %v, %v): %v, %v out of range", origin, e, n, u, lat, lon)
	}
	ge, gn, gu := toLocal(origin, lat, lon, h)
	if d := math.Max(math.Abs(ge-e), math.Max(math.Abs(gn-n), math.Abs(gu-u))); d > 1e-6 {
		t.Fatalf("origin %v offset (%v, %v, %v): back to (%v, %v, %v), %g m off", origin, e, n, u, ge, gn, gu, d)
	}
	return LatLon{Lat: lat, Lon: lon}
}

func TestLocalToWGS84RoundTrip(t *testing.T) {
	origins := []LatLon{
		{52.3171, 7.6306}, {-33.8568, 151.2153}, {0, 0}, {0, 180}, {0, -180}, {12, 179.9999},
		{-45, -179.9999}, {89.9999, 30}, {-89.99, -120}, {90, 0}, {-90, 45}, {78.2232, 15.6267},
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, o := range origins {
		for range 200 {
			// Offsets up to 10 km in any direction, a few metres to kilometres up or down.
			e, n := (rng.Float64()*2-1)*10000, (rng.Float64()*2-1)*10000
			u := (rng.Float64()*2 - 1) * math.Pow(10, rng.Float64()*3)
			roundTrip(t, o, e, n, u)
		}
		for _, d := range [][3]float64{{0, 0, 0}, {10000, 0, 0}, {-10000, 0, 0}, {0, 10000, 0}, {0, -10000, 0}, {7071, 7071, 0}} {
			roundTrip(t, o, d[0], d[1], d[2])
		}
	}
}

func TestLocalToWGS84Cases(t *testing.T) {
	cases := []struct {
		name            string
		origin          LatLon
		east, north, up float64
		want            LatLon
		tol             float64
	}{
		// On the equator at 0°, ECEF is (a, east, north) with nothing to approximate.
		{"equator east 10 km", LatLon{0, 0}, 10000, 0, 0, LatLon{0, math.Atan2(10000, 6378137) * 180 / math.Pi}, 1e-12},
		{"origin stays put", LatLon{-33.8568, 151.2153}, 0, 0, 0, LatLon{-33.8568, 151.2153}, 1e-12},
		{"up changes nothing horizontal", LatLon{-33.8568, 151.2153}, 0, 0, 1000, LatLon{-33.8568, 151.2153}, 1e-12},
		// One metre of meridian at 52.3171° is 1/M radians, M the meridian radius.
		{"north 1 m", LatLon{52.3171, 7.6306}, 0, 1, 0, LatLon{52.3171 + meridianDeg(52.3171), 7.6306}, 1e-12},
		{"south 1 m in the south", LatLon{-33.8568, 151.2153}, 0, -1, 0, LatLon{-33.8568 - meridianDeg(-33.8568), 151.2153}, 1e-12},
		// Also on the equator: an east offset turns the longitude by atan(east/a).
		{"across the antimeridian eastwards", LatLon{0, 179.9999}, 100, 0, 0, LatLon{0, 179.9999 + equatorDeg(100) - 360}, 1e-12},
		{"across the antimeridian westwards", LatLon{0, -179.9999}, -100, 0, 0, LatLon{0, -179.9999 - equatorDeg(100) + 360}, 1e-12},
		{"-180 becomes 180", LatLon{0, -180}, 0, 0, 0, LatLon{0, 180}, 0},
		{"540 becomes 180", LatLon{0, 540}, 0, 0, 0, LatLon{0, 180}, 1e-12},
	}
	for _, c := range cases {
		got := LocalToWGS84(c.origin, c.east, c.north, c.up)
		if !near(got, c.want, c.tol) || got.Lon <= -180 || got.Lon > 180 {
			t.Errorf("%s: got %.13f, %.13f, want %.13f, %.13f", c.name, got.Lat, got.Lon, c.want.Lat, c.want.Lon)
		}
	}
}

// meridianDeg is one metre of meridian arc at lat, in degrees: 1/M with M the radius of
// curvature in the meridian (first order is exact to far below 1e-12° for one metre).
func meridianDeg(lat float64) float64 {
	const a, f = 6378137.0, 1 / 298.257223563
	e2 := f * (2 - f)
	s := math.Sin(lat * math.Pi / 180)
	m := a * (1 - e2) / math.Pow(1-e2*s*s, 1.5)
	return 1 / m * 180 / math.Pi
}

func equatorDeg(east float64) float64 { return math.Atan2(east, 6378137) * 180 / math.Pi }

func TestLocalToWGS84OverThePole(t *testing.T) {
	// 0.01° of latitude below the pole is about 1117 m; going 2000 m north crosses the
	// pole and comes down the opposite meridian (10° + 180° = −170°).
	origin := LatLon{89.99, 10}
	got := roundTrip(t, origin, 0, 2000, 0)
	if math.Abs(got.Lon-(-170)) > 1e-9 || got.Lat <= 89.99 || got.Lat >= 90 {
		t.Fatalf("got %v", got)
	}
	// At the pole any longitude is right; the latitude must be 90.
	at := LocalToWGS84(LatLon{90, 25}, 0, 0, 0)
	if math.Abs(at.Lat-90) > 1e-12 || at.Lon <= -180 || at.Lon > 180 {
		t.Fatalf("at the pole: got %v", at)
	}
	// East at the pole is the direction of longitude λ0 + 90°.
	side := LocalToWGS84(LatLon{90, 25}, 1000, 0, 0)
	if math.Abs(side.Lon-115) > 1e-9 {
		t.Fatalf("east of the pole: got %v", side)
	}
}

func TestLocalToWGS84NaN(t *testing.T) {
	got := LocalToWGS84(LatLon{math.NaN(), 0}, 1, 1, 0)
	if !math.IsNaN(got.Lat) {
		t.Fatalf("got %v", got)
	}
}

func BenchmarkLocalToWGS84(b *testing.B) {
	o := LatLon{52.3171, 7.6306}
	var sink LatLon
	for b.Loop() {
		sink = LocalToWGS84(o, 1234.5, -678.9, 0)
	}
	_ = sink
}
