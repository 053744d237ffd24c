// Package export writes a garden's data in the formats other tools read: GeoJSON
// (RFC 7946) of plants and logs for QGIS, CSV (RFC 4180) of plants, beds and logs for
// spreadsheets and farmOS imports, and a zip of all of them with the garden's picture
// and a world file that places it. Everything is streamed: plants and beds are a
// garden's few hundred records, logs are read a page at a time, the picture is copied
// through; nothing is built whole in memory.
package export

import (
	"context"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// Bed is a registered bed with what the spatial server said of it.
type Bed struct {
	store.Bed
	// Name is the bed's name as registered, else its project's.
	Name string
	// Plants are in plant-name order, with their kept ids; nil when Err is set.
	Plants []Plant
	// Err says why the spatial server gave no plants ("" when it did).
	Err string
}

// Plant is a plant of a bed and its position, when known.
type Plant struct {
	spatial.Plant
	Position *store.LatLon
}

// Source is what exports read of one garden.
type Source interface {
	// Garden is the garden exported.
	Garden() store.Garden
	// Beds reads every bed of the garden with its plants (once per export).
	Beds(ctx context.Context) ([]Bed, error)
	// EachLog hands every log of the garden to fn, newest first.
	EachLog(ctx context.Context, fn func(store.Log) error) error
	// Image opens the garden's picture (PNG) with its coordinates; ErrNoImage when
	// it has none.
	Image(ctx context.Context) (io.ReadCloser, store.Coordinates, error)
	// Now is the time values are summarised at (harvest in weeks).
	Now() time.Time
}

// ErrNoImage: the garden has no picture; garden.zip goes without it.
var ErrNoImage = errors.New("the garden has no image")

// File is one export.
type File struct {
	Name        string
	ContentType string
	Write       func(ctx context.Context, w io.Writer, src Source) error
}

// Files lists the exports, as the API names them.
var Files = []File{
	{"plants.geojson", "application/geo+json", func(ctx context.Context, w io.Writer, src Source) error {
		return withBeds(ctx, src, func(beds []Bed) error { return PlantsGeoJSON(w, beds, src.Now()) })
	}},
	{"plants.csv", csvType, func(ctx context.Context, w io.Writer, src Source) error {
		return withBeds(ctx, src, func(beds []Bed) error { return PlantsCSV(w, beds, src.Now()) })
	}},
	{"beds.csv", csvType, func(ctx context.Context, w io.Writer, src Source) error {
		return withBeds(ctx, src, func(beds []Bed) error { return BedsCSV(w, beds, src.Now()) })
	}},
	{"logs.csv", csvType, func(ctx context.Context, w io.Writer, src Source) error {
		return withBeds(ctx, src, func(beds []Bed) error { return LogsCSV(ctx, w, src, beds) })
	}},
	{"logs.geojson", "application/geo+json", func(ctx context.Context, w io.Writer, src Source) error {
		return withBeds(ctx, src, func(beds []Bed) error { return LogsGeoJSON(ctx, w, src, beds) })
	}},
	{"garden.zip", "application/zip", GardenZip},
}

const csvType = "text/csv; charset=utf-8; header=present"

func withBeds(ctx context.Context, src Source, fn func([]Bed) error) error {
	beds, err := src.Beds(ctx)
	if err != nil {
		return err
	}
	return fn(beds)
}

// FileNamed returns the export of that name.
func FileNamed(name string) (File, bool) {
	for _, f := range Files {
		if f.Name == name {
			return f, true
		}
	}
	return File{}, false
}

// Disposition is the Content-Disposition of an export of garden g: an ASCII name
// that always works (garden-12-plants.csv) and the garden's own name for clients
// that read RFC 6266's filename*.
func Disposition(g store.Garden, file string) string {
	ascii := "garden-" + strconv.FormatUint(g.ID, 10) + "-" + file
	var own strings.Builder
	for _, r := range strings.TrimSpace(g.Name) + "-" + file {
		switch {
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.In(r, unicode.Zl, unicode.Zp) || strings.ContainsRune(`/\:*?"<>|`, r):
			// Control and format characters (a right-to-left override would show
			// "…-logs.csv" as something else), line separators, what file systems refuse.
			own.WriteByte('_')
		default:
			own.WriteRune(r)
		}
	}
	return `attachment; filename="` + ascii + `"; filename*=UTF-8''` + pathEscape(own.String())
}

// pathEscape percent-encodes everything but RFC 5987's attr-chars.
func pathEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// mainHealth are the aspects every export has a column for, in this order; others
// join the health text.
var mainHealth = []string{"water", "nutrients", "diseases"}

// healthOf returns the levels of the main aspects (nil when absent) and a text of
// every aspect ("water 2, nutrients 1").
func healthOf(hs []spatial.Health) ([3]*int64, string) {
	var main [3]*int64
	var parts []string
	for _, h := range hs {
		for i, name := range mainHealth {
			if h.Type == name {
				main[i] = new(h.Level)
			}
		}
		parts = append(parts, h.Type+" "+strconv.FormatInt(h.Level, 10))
	}
	return main, strings.Join(parts, ", ")
}

// bedPosition is the mean position of a bed's placed plants (longitudes as offsets
// from the first, so a bed on the antimeridian stays whole); nil without one.
func bedPosition(b Bed) *store.LatLon {
	var (
		n          int
		lat, dLon  float64
		lon0       float64
		havePlaced bool
	)
	for _, p := range b.Plants {
		if p.Position == nil {
			continue
		}
		if !havePlaced {
			lon0, havePlaced = p.Position.Lon, true
		}
		lat += p.Position.Lat
		dLon += wrap(p.Position.Lon - lon0)
		n++
	}
	if n == 0 {
		return nil
	}
	return &store.LatLon{Lat: lat / float64(n), Lon: wrap(lon0 + dLon/float64(n))}
}

// wrap maps degrees into [−180, 180), leaving a value in range exactly as it is.
func wrap(v float64) float64 {
	if v >= -180 && v < 180 {
		return v
	}
	v = math.Mod(v+180, 360)
	if v < 0 {
		v += 360
	}
	return v - 180
}

// num writes a float as JSON and CSV both read it ("" for none).
func num(v *float64) string {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

func intText(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

func harvestOf(sum spatial.Summary) (text string, weeks *int64) {
	if sum.HarvestWeeks == nil {
		return "", nil
	}
	return spatial.HarvestText(*sum.HarvestWeeks), new(int64(*sum.HarvestWeeks))
}

// bedIndex maps bed ids to beds, and plant ids to plants, for the logs.
type bedIndex struct {
	beds   map[uint64]*Bed
	plants map[string]*Plant // by bed id and plant id: "12/uuid"
}

func indexBeds(beds []Bed) bedIndex {
	ix := bedIndex{beds: map[uint64]*Bed{}, plants: map[string]*Plant{}}
	for i := range beds {
		b := &beds[i]
		ix.beds[b.ID] = b
		for k := range b.Plants {
			ix.plants[strconv.FormatUint(b.ID, 10)+"/"+b.Plants[k].ID] = &b.Plants[k]
		}
	}
	return ix
}

// position is where a log is: its plant's position, else its bed's; nil when
// neither is known.
func (ix bedIndex) position(l store.Log) *store.LatLon {
	if l.Bed == nil {
		return nil
	}
	if l.Plant != nil {
		if p := ix.plants[strconv.FormatUint(*l.Bed, 10)+"/"+*l.Plant]; p != nil && p.Position != nil {
			return p.Position
		}
	}
	if b := ix.beds[*l.Bed]; b != nil {
		return bedPosition(*b)
	}
	return nil
}

func (ix bedIndex) bedName(l store.Log) string {
	if l.Bed == nil {
		return ""
	}
	if b := ix.beds[*l.Bed]; b != nil {
		return b.Name
	}
	return ""
}
