package export

import (
	"bufio"
	"context"
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// CSV files follow RFC 4180: UTF-8, CRLF line ends, a header row, fields quoted when
// they hold a comma, quote or line break. Text that people typed or a server named
// (titles, notes, names, units, species, uuids) is neutralised against formula
// injection: a cell that a spreadsheet would run as a formula gets a leading
// apostrophe, which spreadsheets show as text. Numbers gardend writes itself are left
// as they are, negative coordinates included.

// text neutralises a cell of text for spreadsheets.
func text(s string) string {
	if formulaLike(s) {
		return "'" + s
	}
	return s
}

// formulaLike reports whether a spreadsheet may run s as a formula: it starts with
// a tab or a line break, or its first character past blanks and quotes (which an
// import may trim) is = + - @ or their full-width forms (which some spreadsheets
// read as the ASCII ones).
func formulaLike(s string) bool {
	for i, r := range s {
		switch {
		case i == 0 && (r == '\t' || r == '\r' || r == '\n'):
			return true
		case unicode.IsSpace(r) || strings.ContainsRune(quotes, r):
			continue
		}
		return strings.ContainsRune("=+-@\uFF1D\uFF0B\uFF0D\uFF20", r)
	}
	return false
}

// quotes are the quotation marks an import may strip: ASCII, typographic, full-width.
const quotes = "\"'\u2018\u2019\u201C\u201D\uFF02\uFF07"

// csvWriter writes rows through a buffer; Flush reports the first error.
type csvWriter struct {
	bw *bufio.Writer
	cw *csv.Writer
}

func newCSV(w io.Writer, header ...string) *csvWriter {
	bw := bufio.NewWriterSize(w, 32<<10)
	cw := csv.NewWriter(bw)
	cw.UseCRLF = true
	c := &csvWriter{bw: bw, cw: cw}
	_ = c.row(header...) // a failed write is kept by the writers and reported by flush
	return c
}

func (c *csvWriter) row(fields ...string) error { return c.cw.Write(fields) }

func (c *csvWriter) flush() error {
	c.cw.Flush()
	if err := c.cw.Error(); err != nil {
		return err
	}
	return c.bw.Flush()
}

var plantColumns = []string{"bed", "bed_name", "plant", "name", "species", "variety", "latitude", "longitude",
	"soil_humidity", "yield", "harvest", "harvest_weeks", "health_water", "health_nutrients", "health_diseases", "health",
	"status", "measured"}

// PlantsCSV writes every plant of every bed, placed or not.
func PlantsCSV(w io.Writer, beds []Bed, now time.Time) error {
	c := newCSV(w, plantColumns...)
	for _, b := range beds {
		for _, p := range b.Plants {
			if err := c.row(plantRow(b, p, now)...); err != nil {
				return err
			}
		}
	}
	return c.flush()
}

func plantRow(b Bed, p Plant, now time.Time) []string {
	sum := spatial.PlantSummary(p.Plant, now)
	harvest, weeks := harvestOf(sum)
	main, all := healthOf(sum.Health)
	var lat, lon string
	if p.Position != nil {
		lat, lon = num(&p.Position.Lat), num(&p.Position.Lon)
	}
	measured := ""
	if !p.MeasuredAt.IsZero() {
		measured = p.MeasuredAt.UTC().Format(time.RFC3339)
	}
	return []string{strconv.FormatUint(b.ID, 10), text(b.Name), text(p.ID), text(p.Name), text(sum.Species), text(sum.Variety),
		lat, lon, num(sum.SoilHumidity), num(sum.Yield), harvest, intText(weeks),
		intText(main[0]), intText(main[1]), intText(main[2]), text(all), text(p.Status), measured}
}

// BedsCSV writes every registered bed with its values over its plants, its mean
// position and, for a bed the spatial server did not answer for, why.
func BedsCSV(w io.Writer, beds []Bed, now time.Time) error {
	c := newCSV(w, "bed", "name", "uuid", "plants", "species", "variety", "latitude", "longitude",
		"soil_humidity", "yield", "harvest", "harvest_weeks", "health_water", "health_nutrients", "health_diseases", "health", "error")
	for _, b := range beds {
		row := []string{strconv.FormatUint(b.ID, 10), text(b.Name), text(b.UUID)}
		if b.Err != "" {
			row = append(row, "", "", "", "", "", "", "", "", "", "", "", "", "", text(b.Err))
		} else {
			plants := make([]spatial.Plant, len(b.Plants))
			for i, p := range b.Plants {
				plants[i] = p.Plant
			}
			sum := spatial.Summarize(plants, now)
			harvest, weeks := harvestOf(sum)
			main, all := healthOf(sum.Health)
			var lat, lon string
			if pos := bedPosition(b); pos != nil {
				lat, lon = num(&pos.Lat), num(&pos.Lon)
			}
			row = append(row, strconv.Itoa(len(b.Plants)), text(sum.Species), text(sum.Variety), lat, lon,
				num(sum.SoilHumidity), num(sum.Yield), harvest, intText(weeks),
				intText(main[0]), intText(main[1]), intText(main[2]), text(all), "")
		}
		if err := c.row(row...); err != nil {
			return err
		}
	}
	return c.flush()
}

// LogsCSV writes every log of the garden, newest first.
func LogsCSV(ctx context.Context, w io.Writer, src Source, beds []Bed) error {
	ix := indexBeds(beds)
	c := newCSV(w, "id", "type", "title", "notes", "at", "status", "bed", "bed_name", "bed_removed", "plant",
		"quantity", "unit", "assignee", "author", "created", "updated", "photos")
	err := src.EachLog(ctx, func(l store.Log) error {
		var bed, plant, q, unit, assignee string
		if l.Bed != nil {
			bed = strconv.FormatUint(*l.Bed, 10)
		}
		if l.Plant != nil {
			plant = *l.Plant
		}
		if l.Quantity != nil {
			q, unit = num(&l.Quantity.Value), l.Quantity.Unit
		}
		if l.Assignee != nil {
			assignee = *l.Assignee
		}
		photos := make([]string, len(l.Photos))
		for i, id := range l.Photos {
			photos[i] = strconv.FormatUint(id, 10)
		}
		return c.row(strconv.FormatUint(l.ID, 10), string(l.Type), text(l.Title), text(l.Notes), l.At.UTC().Format(time.RFC3339Nano),
			string(l.Status), bed, text(ix.bedName(l)), strconv.FormatBool(l.BedRemoved), text(plant), q, text(unit),
			text(assignee), text(l.Author), l.Created.UTC().Format(time.RFC3339Nano), l.Updated.UTC().Format(time.RFC3339Nano),
			strings.Join(photos, " "))
	})
	if err != nil {
		return err
	}
	return c.flush()
}
