package demo

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"

	"github.com/gardend/gardend/spatial"
)

// GardenPNG draws the dataset's garden seen from above, north up: grass, the beds as
// soil rectangles and a dot per plant with a known position. It returns the PNG and the
// latitude and longitude of the picture's corners (top_left, top_right, bottom_left,
// bottom_right), as the garden image upload wants them. w and h below 16 are raised
// to 16.
func GardenPNG(ds *Dataset, w, h int) ([]byte, map[string]spatial.LatLon) {
	w, h = max(w, 16), max(h, 16)
	// The garden's extent in metres east and north of ds.Origin, with a margin.
	const margin = 1.5
	minE, minN, maxE, maxN := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, b := range ds.Beds {
		e, n := metresFrom(ds.Origin, b.Geolocation)
		minE, minN = min(minE, e), min(minN, n)
		maxE, maxN = max(maxE, e+b.Size[0]), max(maxN, n+b.Size[1])
	}
	if len(ds.Beds) == 0 {
		minE, minN, maxE, maxN = 0, 0, 1, 1
	}
	minE, minN, maxE, maxN = minE-margin, minN-margin, maxE+margin, maxN+margin
	px := func(e, n float64) (int, int) {
		return int((e - minE) / (maxE - minE) * float64(w)), int((maxN - n) / (maxN - minN) * float64(h))
	}

	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill(img, img.Rect, color.RGBA{R: 86, G: 140, B: 60, A: 255})
	for _, b := range ds.Beds {
		e, n := metresFrom(ds.Origin, b.Geolocation)
		x0, y1 := px(e, n)
		x1, y0 := px(e+b.Size[0], n+b.Size[1])
		fill(img, image.Rect(x0, y0, x1, y1), color.RGBA{R: 110, G: 78, B: 48, A: 255})
		r := max(1, (x1-x0)/12)
		for _, p := range b.Plants {
			if !p.HasPosition {
				continue
			}
			x, y := px(e+p.MapPosition[0], n+p.MapPosition[1])
			fill(img, image.Rect(x-r, y-r, x+r+1, y+r+1), color.RGBA{R: 40, G: 200, B: 70, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic("demo: encoding an in-memory PNG: " + err.Error()) // cannot fail for an RGBA image
	}
	corners := map[string]spatial.LatLon{
		"top_left":     offsetLatLon(ds.Origin, minE, maxN),
		"top_right":    offsetLatLon(ds.Origin, maxE, maxN),
		"bottom_left":  offsetLatLon(ds.Origin, minE, minN),
		"bottom_right": offsetLatLon(ds.Origin, maxE, minN),
	}
	return buf.Bytes(), corners
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}
