package export

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gardend/gardend/store"
)

// WorldFile is the ESRI world file of a picture of width × height pixels whose outer
// corners top_left, top_right and bottom_left lie at the coordinates given, as the
// web app places it (an affine map of the pixel grid onto longitude and latitude; the
// fourth corner follows). Its six lines are A, D, B, E, C, F of
//
//	lon = A·col + B·row + C
//	lat = D·col + E·row + F
//
// where (col, row) is a pixel's centre in pixel indices: the usual convention, so
// (C, F) is the centre of the top-left pixel, half a pixel in from the corner.
func WorldFile(cs store.Coordinates, width, height int) (string, error) {
	a, b, c, d, e, f, err := Affine(cs, width, height)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, v := range []float64{a, d, b, e, c, f} {
		sb.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
		sb.WriteString("\r\n")
	}
	return sb.String(), nil
}

// Affine is the world file's map (see WorldFile). Longitudes of the three corners
// are taken as offsets from the top left's, so a picture astride the antimeridian
// keeps its size (the map then gives longitudes past ±180, which GIS tools read).
func Affine(cs store.Coordinates, width, height int) (a, b, c, d, e, f float64, err error) {
	if width <= 0 || height <= 0 {
		return 0, 0, 0, 0, 0, 0, fmt.Errorf("picture of %d×%d pixels", width, height)
	}
	corner := map[string]store.Coordinate{}
	for _, c := range cs {
		corner[c.Name] = c
	}
	tl, ok1 := corner["top_left"]
	tr, ok2 := corner["top_right"]
	bl, ok3 := corner["bottom_left"]
	if !ok1 || !ok2 || !ok3 {
		return 0, 0, 0, 0, 0, 0, fmt.Errorf("the coordinates lack a corner")
	}
	w, h := float64(width), float64(height)
	a = wrap(tr.Longitude-tl.Longitude) / w
	d = (tr.Latitude - tl.Latitude) / w
	b = wrap(bl.Longitude-tl.Longitude) / h
	e = (bl.Latitude - tl.Latitude) / h
	// The outer corner is at (col, row) = (−½, −½).
	c = tl.Longitude + a/2 + b/2
	f = tl.Latitude + d/2 + e/2
	return a, b, c, d, e, f, nil
}

// PRJ is the projection file of EPSG:4326 (WGS 84, degrees), in the WKT that
// QGIS and ArcGIS read beside a world file.
const PRJ = `GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],` +
	`AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],` +
	`UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AXIS["Latitude",NORTH],AXIS["Longitude",EAST],` +
	`AUTHORITY["EPSG","4326"]]` + "\r\n"
